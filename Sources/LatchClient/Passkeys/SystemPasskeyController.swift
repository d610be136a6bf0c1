#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticationServices
import Foundation

/// Passkeys through Apple's AuthenticationServices: the system sheet creates a passkey in iCloud Keychain (or the
/// user's chosen credential manager) and signs in with one, through
/// `ASAuthorizationPlatformPublicKeyCredentialProvider` and `ASAuthorizationController`.
///
/// The app must list `webcredentials:<relying party id>` in its Associated Domains entitlement, and the relying party's
/// domain must name the app's App ID in its `apple-app-site-association` (Latch serves it from the issuer's host once
/// the app's client has iOS App IDs: `latch admin clients evidence <client> --ios-app-id TEAMID.bundle.id`, which also
/// makes the server accept the app's origin `https://<relying party id>`). Without both, the system refuses with
/// ``UserClientError/Code/passkeyFailed``.
///
/// Made and used on the main actor, with the window the sheet is presented over:
/// ```swift
/// let passkeys = SystemPasskeyController(anchor: view.window!)
/// let tokens = try await client.signInWithPasskey(controller: passkeys)
/// ```
///
/// The system's errors become:
/// - `ASAuthorizationError.canceled` (the user closed the sheet; iOS also answers this when the device has no passkey
///   for the relying party) and `.notInteractive` → ``UserClientError/cancelled``;
/// - `.failed` and `.notHandled` (the app is not associated with the domain, passkeys are unavailable),
///   `.invalidResponse`, `.unknown`, newer codes and any other error → ``UserClientError/Code/passkeyFailed``, with the
///   system's code in the message.
///
/// A Swift task cancelled while the sheet is shown cancels the sheet (and ends with ``UserClientError/cancelled``).
@available(iOS 16, macOS 13, *)
@MainActor
public final class SystemPasskeyController: PasskeyController {
    private let presentationAnchor: @MainActor () -> ASPresentationAnchor

    /// A controller whose sheets are presented over the window `presentationAnchor` returns, asked each time.
    public init(presentationAnchor: @escaping @MainActor () -> ASPresentationAnchor) {
        self.presentationAnchor = presentationAnchor
    }

    /// A controller whose sheets are presented over `anchor` (the controller keeps it).
    public convenience init(anchor: ASPresentationAnchor) {
        self.init(presentationAnchor: { anchor })
    }

    /// Shows the system sheet that creates a passkey for `request`'s relying party and user.
    public func createPasskey(_ request: PasskeyRegistrationRequest) async throws(UserClientError) -> PasskeyRegistration {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.relyingPartyID)
        let platformRequest = provider.createCredentialRegistrationRequest(challenge: request.challenge, name: request.userName, userID: request.userID)
        if let displayName = request.displayName { platformRequest.displayName = displayName }
        platformRequest.userVerificationPreference = Self.preference(request.userVerification)
        platformRequest.attestationPreference = Self.attestation(request.attestation)
        // `excludedCredentials` is iOS 17.4 / macOS 14.4: the server refuses a passkey it has registered already.
        switch await PasskeySheet(anchor: presentationAnchor()).run(platformRequest) {
        case .registration(let registration): return registration
        case .assertion: throw .invalidInput("the system answered a passkey creation with a sign-in")
        case .failure(let error): throw error
        }
    }

    /// Shows the system sheet that signs in with a passkey of `request`'s relying party (one of
    /// ``PasskeyAssertionRequest/allowedCredentialIDs``, or any when it is empty).
    public func assertPasskey(_ request: PasskeyAssertionRequest) async throws(UserClientError) -> PasskeyAssertion {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.relyingPartyID)
        let platformRequest = provider.createCredentialAssertionRequest(challenge: request.challenge)
        platformRequest.allowedCredentials = request.allowedCredentialIDs.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0) }
        platformRequest.userVerificationPreference = Self.preference(request.userVerification)
        switch await PasskeySheet(anchor: presentationAnchor()).run(platformRequest) {
        case .assertion(let assertion): return assertion
        case .registration: throw .invalidInput("the system answered a passkey sign-in with a new passkey")
        case .failure(let error): throw error
        }
    }

    static func preference(_ value: PasskeyUserVerification) -> ASAuthorizationPublicKeyCredentialUserVerificationPreference {
        switch value {
        case .required: .required
        case .preferred: .preferred
        case .discouraged: .discouraged
        }
    }

    static func attestation(_ value: PasskeyAttestationPreference) -> ASAuthorizationPublicKeyCredentialAttestationKind {
        switch value {
        case .none: .none
        case .indirect: .indirect
        case .direct: .direct
        case .enterprise: .enterprise
        }
    }
}

/// How one sheet ended: only `Sendable` values, copied out of the system's objects in the delegate call.
enum PasskeySheetOutcome: Sendable {
    case registration(PasskeyRegistration)
    case assertion(PasskeyAssertion)
    case failure(UserClientError)
}

/// One `ASAuthorizationController` run: its delegate and presentation context provider, resuming the waiting task
/// once. The system calls the delegate on the main thread; the continuation is behind a lock all the same, so the
/// conformances need no actor isolation (AuthenticationServices' protocols are not main-actor annotated in the
/// iOS 16 SDK and are in later ones; nonisolated witnesses fit both).
@available(iOS 16, macOS 13, *)
final class PasskeySheet: NSObject, @unchecked Sendable {
    private let anchor: ASPresentationAnchor
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var continuation: CheckedContinuation<PasskeySheetOutcome, Never>?
    /// Guarded by `lock`. Kept until the sheet ends: the controller holds its delegate weakly, and this holds the
    /// controller.
    private var controller: ASAuthorizationController?

    init(anchor: ASPresentationAnchor) {
        self.anchor = anchor
    }

    /// Shows the sheet for `request` and waits for its outcome.
    @MainActor
    func run(_ request: ASAuthorizationRequest) async -> PasskeySheetOutcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PasskeySheetOutcome, Never>) in
                let controller = ASAuthorizationController(authorizationRequests: [request])
                controller.delegate = self
                controller.presentationContextProvider = self
                lock.lock()
                self.continuation = continuation
                self.controller = controller
                lock.unlock()
                if Task.isCancelled {
                    finish(.failure(.cancelled))
                } else {
                    controller.performRequests()
                }
            }
        } onCancel: {
            Task { @MainActor in self.cancel() }
        }
    }

    /// Cancels a sheet still shown (the delegate then reports `canceled`).
    @MainActor
    private func cancel() {
        lock.lock()
        let controller = self.continuation == nil ? nil : self.controller
        lock.unlock()
        controller?.cancel()
    }

    /// Resumes the waiting task with `outcome`, once; later calls do nothing.
    func finish(_ outcome: PasskeySheetOutcome) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        self.controller = nil
        lock.unlock()
        continuation?.resume(returning: outcome)
    }

    /// The Sendable copy of what the system returned.
    static func outcome(_ credential: any ASAuthorizationCredential) -> PasskeySheetOutcome {
        if let registration = credential as? ASAuthorizationPlatformPublicKeyCredentialRegistration {
            return .registration(
                PasskeyRegistration(
                    credentialID: registration.credentialID, rawClientDataJSON: registration.rawClientDataJSON,
                    rawAttestationObject: registration.rawAttestationObject))
        }
        if let assertion = credential as? ASAuthorizationPlatformPublicKeyCredentialAssertion {
            let userID: Data? = assertion.userID
            let authenticatorData: Data? = assertion.rawAuthenticatorData
            let signature: Data? = assertion.signature
            guard let authenticatorData, let signature else { return .failure(.invalidInput("the system's passkey assertion is incomplete")) }
            return .assertion(
                PasskeyAssertion(
                    credentialID: assertion.credentialID, rawClientDataJSON: assertion.rawClientDataJSON, rawAuthenticatorData: authenticatorData,
                    signature: signature, userID: userID))
        }
        return .failure(.invalidInput("the system answered with a credential that is not a passkey (\(type(of: credential)))"))
    }

    /// A system error as a ``UserClientError`` (see ``SystemPasskeyController``).
    static func error(_ error: any Error) -> UserClientError {
        guard let error = error as? ASAuthorizationError else {
            return .platform(.passkeyFailed, "passkey: \(error.localizedDescription)", underlying: error)
        }
        switch error.code {
        case .canceled, .notInteractive:
            return .cancelled
        case .failed, .notHandled:
            return .platform(
                .passkeyFailed,
                "the system refused the passkey request (\(error.code.rawValue): \(error.localizedDescription)); check that the app's associated "
                    + "domains list webcredentials:<relying party id> and that the domain's apple-app-site-association names the app",
                underlying: error)
        case .invalidResponse, .unknown:
            return .platform(
                .passkeyFailed, "the system's passkey answer is unusable (\(error.code.rawValue): \(error.localizedDescription))", underlying: error)
        @unknown default:
            return .platform(.passkeyFailed, "passkey error \(error.code.rawValue): \(error.localizedDescription)", underlying: error)
        }
    }
}

@available(iOS 16, macOS 13, *)
extension PasskeySheet: ASAuthorizationControllerDelegate {
    nonisolated func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {
        finish(Self.outcome(authorization.credential))
    }

    nonisolated func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {
        finish(.failure(Self.error(error)))
    }
}

@available(iOS 16, macOS 13, *)
extension PasskeySheet: ASAuthorizationControllerPresentationContextProviding {
    nonisolated func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor { anchor }
}
#endif
