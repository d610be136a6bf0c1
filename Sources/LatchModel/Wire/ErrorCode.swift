/// A stable, machine-readable error code: the `error` member of every error answer.
///
/// Clients branch on the code, never on `error_description`. The codes at the OAuth endpoints are those of
/// RFC 6749 §5.2, RFC 6750 §3.1, RFC 7009 §2.2.1 and RFC 9470 §3; the rest are Latch's own. The full table,
/// with HTTP statuses, is in `docs/errors.md`.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    // MARK: RFC 6749 §5.2 (token endpoint)
    /// The request is missing a parameter, repeats one, or is otherwise malformed.
    public static let invalidRequest = ErrorCode("invalid_request")
    /// The client is unknown.
    public static let invalidClient = ErrorCode("invalid_client")
    /// The assertion or refresh token is invalid, expired, revoked or already used.
    public static let invalidGrant = ErrorCode("invalid_grant")
    /// The client may not use this grant.
    public static let unauthorizedClient = ErrorCode("unauthorized_client")
    /// The grant type is not supported.
    public static let unsupportedGrantType = ErrorCode("unsupported_grant_type")
    /// The requested scope is unknown or exceeds what was granted.
    public static let invalidScope = ErrorCode("invalid_scope")
    /// RFC 7009 §2.2.1: the token type hint names a type this server cannot revoke.
    public static let unsupportedTokenType = ErrorCode("unsupported_token_type")

    // MARK: RFC 6750 §3.1, RFC 9470 §3 (protected resources)
    /// The access token is missing, malformed, expired, or its session was revoked.
    public static let invalidToken = ErrorCode("invalid_token")
    /// The operation needs a more recent sign-in (`max_age` in the `WWW-Authenticate` answer).
    public static let insufficientUserAuthentication = ErrorCode("insufficient_user_authentication")

    // MARK: RFC 9449 (DPoP)
    /// The DPoP proof is missing where required, malformed, not signed by its key, not for this request, too old,
    /// replayed, or of another key than the token's binding.
    public static let invalidDPoPProof = ErrorCode("invalid_dpop_proof")
    /// The proof must carry the server's nonce: retry with the `DPoP-Nonce` header's value.
    public static let useDPoPNonce = ErrorCode("use_dpop_nonce")

    // MARK: RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6 (authorization endpoint)
    /// The authorization server does not serve this `response_type` (only `code`).
    public static let unsupportedResponseType = ErrorCode("unsupported_response_type")
    /// The user or the upstream identity provider refused the request.
    public static let accessDenied = ErrorCode("access_denied")
    /// `prompt=none`, but the user must sign in.
    public static let loginRequired = ErrorCode("login_required")
    /// `prompt=none`, but the user must choose an identity provider.
    public static let interactionRequired = ErrorCode("interaction_required")
    /// `request` objects are not supported (OIDC Core §6).
    public static let requestNotSupported = ErrorCode("request_not_supported")
    /// `request_uri` is not supported (OIDC Core §6).
    public static let requestURINotSupported = ErrorCode("request_uri_not_supported")

    // MARK: Latch
    /// The body is not well-formed JSON of the expected shape.
    public static let invalidJSON = ErrorCode("invalid_json")
    /// The body or a token in it exceeds the size limit.
    public static let requestTooLarge = ErrorCode("request_too_large")
    /// The registration challenge type is unknown or not (yet) supported.
    public static let unsupportedChallengeType = ErrorCode("unsupported_challenge_type")
    /// The challenge type exists but this deployment switched it off (e.g. test keys in production).
    public static let challengeTypeDisabled = ErrorCode("challenge_type_disabled")
    /// The registration answer (a JWT) failed verification.
    public static let invalidProof = ErrorCode("invalid_proof")
    /// The public key could not be read, or its type or size is not accepted.
    public static let invalidPublicKey = ErrorCode("invalid_public_key")
    /// A user with this identity already exists.
    public static let alreadyRegistered = ErrorCode("already_registered")
    /// The `registrationId` was used before with a different proof.
    public static let registrationConflict = ErrorCode("registration_conflict")
    /// A field is missing or has a value outside its allowed range.
    public static let invalidInput = ErrorCode("invalid_input")
    /// The admin token is missing or wrong.
    public static let unauthorized = ErrorCode("unauthorized")
    /// The admin token is valid, but its role may not call this route or do this (the description names the role
    /// needed).
    public static let forbidden = ErrorCode("forbidden")
    /// A console form or script call without the session's CSRF token, or from another origin.
    public static let invalidCSRFToken = ErrorCode("invalid_csrf_token")
    /// The addressed resource does not exist.
    public static let notFound = ErrorCode("not_found")
    /// The resource exists already (admin API).
    public static let conflict = ErrorCode("conflict")
    /// The HTTP method is not allowed on this path.
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    /// Too many requests from this address; retry after the `Retry-After` seconds.
    public static let rateLimited = ErrorCode("rate_limited")
    /// The store cannot be reached or is overloaded; retry later. Nothing was written.
    public static let temporarilyUnavailable = ErrorCode("temporarily_unavailable")
    /// An unexpected failure; nothing was written.
    public static let serverError = ErrorCode("server_error")

    // MARK: WebAuthn (FIDO2)
    /// The client data is not what the ceremony expects: type, challenge, origin, or it is not JSON.
    public static let webauthnClientDataInvalid = ErrorCode("webauthn_client_data_invalid")
    /// The authenticator data is for another relying party (rpIdHash).
    public static let webauthnRelyingPartyMismatch = ErrorCode("webauthn_rp_mismatch")
    /// The user was not present (UP flag), or not verified (UV flag) where the policy requires it.
    public static let webauthnUserNotVerified = ErrorCode("webauthn_user_not_verified")
    /// The credential's algorithm is not one the relying party accepts.
    public static let webauthnUnsupportedAlgorithm = ErrorCode("webauthn_unsupported_algorithm")
    /// The attestation statement does not verify (format, signature, certificate requirements or trust).
    public static let webauthnAttestationInvalid = ErrorCode("webauthn_attestation_invalid")
    /// The assertion's signature does not verify with the credential's public key.
    public static let webauthnSignatureInvalid = ErrorCode("webauthn_signature_invalid")
    /// The signature counter went back or stood still: a cloned authenticator is possible.
    public static let webauthnCounterRegressed = ErrorCode("webauthn_counter_regressed")
    /// An out-of-band token's lifetime (`oob.tokenLifetime`) is over.
    public static let oobTokenExpired = ErrorCode("oob_token_expired")
    /// The out-of-band token was redeemed before (single use).
    public static let oobTokenRedeemed = ErrorCode("oob_token_redeemed")
    /// No out-of-band transaction has this token.
    public static let oobTokenUnknown = ErrorCode("oob_token_unknown")
    /// The token is for another operation than the endpoint's (registration, authentication, deregistration).
    public static let oobWrongOperation = ErrorCode("oob_wrong_operation")
    /// The authenticator model (AAGUID) is denied, or not among the allowed ones, by the deployment's policy.
    public static let authenticatorNotAllowed = ErrorCode("authenticator_not_allowed")
    /// A PIN authenticator's proof did not verify (a wrong PIN), or it is cooling down or locked out; the answer's
    /// `pinStatus` says which and how many tries remain. (At the token endpoint this is `invalid_grant` with
    /// `pinStatus`.)
    public static let pinAttemptFailed = ErrorCode("pin_attempt_failed")
    /// A bound PIN authenticator's assertion without its device binding signature, or with one that does not verify
    /// (docs/fido.md, "PIN binding"): refused before anything is reserved or counted. (At the token endpoint this is
    /// `invalid_grant` with `reason` `pin_binding_invalid`.)
    public static let pinBindingInvalid = ErrorCode("pin_binding_invalid")

    // MARK: Device attestation

    /// The evidence is not well-formed: CBOR, ASN.1, JWE/JWS or base64 that cannot be read, or a field of the wrong
    /// type or size.
    public static let attestationMalformed = ErrorCode("attestation_malformed")
    /// The certificate chain does not verify to a trusted root at the verification time (signature, validity,
    /// CA constraints), or a signature over the evidence does not verify.
    public static let attestationUntrusted = ErrorCode("attestation_untrusted")
    /// The evidence does not bind the registration challenge (nonce, attestation challenge or request hash).
    public static let attestationChallengeMismatch = ErrorCode("attestation_challenge_mismatch")
    /// The attested key is not the key the request names (App Attest key id, credential id, registered key).
    public static let attestationKeyMismatch = ErrorCode("attestation_key_mismatch")
    /// The evidence names an app that is not registered with Latch (App ID, package name, signing certificate).
    public static let attestationAppMismatch = ErrorCode("attestation_app_mismatch")
    /// App Attest: the environment (development or production AAGUID) is not the app's.
    public static let attestationEnvironmentMismatch = ErrorCode("attestation_environment_mismatch")
    /// The signature counter is not the expected one (not 0 at attestation). At sign-in a counter that does not grow
    /// is `invalid_grant` (RFC 6749), with the reason in the description.
    public static let attestationCounterInvalid = ErrorCode("attestation_counter_invalid")
    /// Android key attestation: the security level or verified-boot state is below the deployment's policy.
    public static let attestationPolicyFailed = ErrorCode("attestation_policy_failed")
    /// A certificate of the chain is on the attestation status (revocation) list.
    public static let attestationRevoked = ErrorCode("attestation_revoked")
    /// Play Integrity: the verdict is older than the deployment's freshness window.
    public static let integrityTokenStale = ErrorCode("integrity_token_stale")
    /// Play Integrity: Google Play does not recognise this build of the app (`appRecognitionVerdict`).
    public static let integrityAppUnrecognized = ErrorCode("integrity_app_unrecognized")
    /// Play Integrity: the app is signed with a certificate that is not registered for it.
    public static let integrityCertificateMismatch = ErrorCode("integrity_certificate_mismatch")
    /// Play Integrity: the device verdict is below the deployment's policy (`deviceRecognitionVerdict`).
    public static let integrityDeviceVerdict = ErrorCode("integrity_device_verdict")
    /// Play Integrity: the app is not licensed to this user (`appLicensingVerdict`), and the policy requires it.
    public static let integrityUnlicensed = ErrorCode("integrity_unlicensed")
    /// DeviceCheck: Apple's per-device bit says this device registered before (one registration per device).
    public static let deviceAlreadyRegistered = ErrorCode("device_already_registered")
    /// The registration challenge is unknown, expired, already used or for another proof type.
    public static let invalidChallenge = ErrorCode("invalid_challenge")

    // MARK: Custom registration

    /// No custom identity provider has this id.
    public static let customProviderUnknown = ErrorCode("custom_provider_unknown")
    /// The custom identity provider exists but is disabled.
    public static let customProviderDisabled = ErrorCode("custom_provider_disabled")
    /// The request is for the other flow: `init` on a one-step provider, or `complete` naming a two-step provider
    /// instead of its transaction.
    public static let customFlowMismatch = ErrorCode("custom_flow_mismatch")
    /// `complete` before `init` succeeded, or `init` again after it succeeded.
    public static let customStepOutOfOrder = ErrorCode("custom_step_out_of_order")
    /// No custom registration transaction has this id.
    public static let customTransactionUnknown = ErrorCode("custom_transaction_unknown")
    /// The transaction's lifetime is over; start again.
    public static let customTransactionExpired = ErrorCode("custom_transaction_expired")
    /// The transaction was completed, cancelled or failed (its `state` member says which).
    public static let customTransactionFinished = ErrorCode("custom_transaction_finished")
    /// The transaction was started by another client.
    public static let customTransactionClientMismatch = ErrorCode("custom_transaction_client_mismatch")
    /// The hook answered 4000–4999: the same step may be tried again on `transactionId` (members `status`, `data`).
    public static let customRegistrationRetry = ErrorCode("custom_registration_retry")
    /// The hook answered 5000–5999: the transaction is dead; start again (members `status`, `data`).
    public static let customRegistrationRestart = ErrorCode("custom_registration_restart")
    /// The hook could not be reached, or answered HTTP 5xx/429 on every attempt. The transaction stays usable.
    public static let hookUnavailable = ErrorCode("hook_unavailable")
    /// The hook did not answer within the provider's timeout on any attempt. The transaction stays usable.
    public static let hookTimeout = ErrorCode("hook_timeout")
    /// The hook's answer is unusable: not JSON of the documented shape, too large, a redirect, another HTTP status,
    /// a status outside 2000–2999/4000–5999, or success without an acceptable user. The transaction stays usable.
    public static let hookInvalidAnswer = ErrorCode("hook_invalid_answer")
    /// The hook URL, or an address its host resolves to, is refused by the deployment's address policy
    /// (`hooks.allowPrivateAddresses`).
    public static let hookAddressRefused = ErrorCode("hook_address_refused")
    /// Hosted pages: the authorization request cannot be answered by redirect because its client or redirect URI is
    /// not verified (never an open redirect).
    public static let unregisteredRedirectURI = ErrorCode("unregistered_redirect_uri")
    /// Hosted pages: the sign-in at the upstream identity provider came back without a valid state (expired, forged,
    /// already used, or from another browser).
    public static let invalidAuthorizationState = ErrorCode("invalid_authorization_state")
    /// The upstream identity provider did not answer, or answered with an error or something unreadable.
    public static let upstreamUnavailable = ErrorCode("upstream_unavailable")
    /// The upstream identity provider's ID token failed validation (signature, issuer, audience, nonce, time).
    public static let upstreamInvalidIDToken = ErrorCode("upstream_invalid_id_token")
    /// The upstream identity is not allowed here (email domain), or carries no usable username.
    public static let upstreamIdentityRefused = ErrorCode("upstream_identity_refused")
    /// No such upstream identity provider, or the app does not allow it.
    public static let upstreamIdPUnknown = ErrorCode("upstream_idp_unknown")
}

/// The JSON body of every error answer (RFC 6749 §5.2 member names).
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// The stable code.
    public var error: ErrorCode
    /// A human-readable explanation; may change between releases.
    public var errorDescription: String?
    /// A PIN authenticator's status after a failed or refused attempt.
    public var pinStatus: FidoPinStatus?
    /// At the token endpoint, why an `invalid_grant` was refused where the app can act on it
    /// (``ErrorCode/pinBindingInvalid``).
    public var reason: ErrorCode?

    public init(error: ErrorCode, errorDescription: String?, pinStatus: FidoPinStatus? = nil, reason: ErrorCode? = nil) {
        self.error = error
        self.errorDescription = errorDescription
        self.pinStatus = pinStatus
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
        case pinStatus
        case reason
    }
}
