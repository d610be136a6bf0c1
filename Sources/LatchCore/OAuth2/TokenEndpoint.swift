import LatchModel
import Tracing
import Logging

/// The token endpoint (RFC 6749 §3.2): finds the client and the grant handler, and lets the handler answer.
public struct TokenEndpoint: Sendable {
    let grants: [String: any TokenGrant]
    let clients: ClientRegistry
    /// DPoP (RFC 9449): checks and spends proofs; nil serves bearer tokens only.
    public let dpop: DPoPGate?
    /// Where refused sign-ins are recorded; nil records none.
    let failures: AuditRecorder?

    public init(grants: [any TokenGrant], clients: ClientRegistry, dpop: DPoPGate? = nil, failures: AuditRecorder? = nil) {
        self.grants = Dictionary(grants.map { ($0.grantType, $0) }, uniquingKeysWith: { first, _ in first })
        self.clients = clients
        self.dpop = dpop
        self.failures = failures
    }

    /// The grant types served, sorted (for the discovery document).
    public var grantTypes: [String] { grants.keys.sorted() }

    /// Parameters a grant may repeat (RFC 6749 §3.2 forbids repeats of every other one).
    public static let repeatableParameters: Set<String> = ["issuer_token"]

    /// Answers a token request given its form parameters (each at most once, except ``repeatableParameters``, given
    /// in `repeated`) and the access token of an `Authorization: Bearer` header.
    ///
    /// - Step 1. `grant_type` is present.
    /// - Step 2. The client is known (`invalid_client`).
    /// - Step 3. The grant type is served (`unsupported_grant_type`).
    /// - Step 4. The DPoP proof, under the client's policy: checked (RFC 9449 §4.3) and its `jti` spent — a proof is
    ///   good for one request, even one that then fails.
    /// - Step 5. The grant's handler answers.
    public func exchange(
        _ parameters: [String: String], repeated: [String: [String]] = [:], bearer: String? = nil, dpopHeaders: [String] = []
    ) async throws -> TokenResponse {
        // Step 1.
        guard let grantType = parameters["grant_type"], !grantType.isEmpty else {
            throw LatchError.invalidRequest("grant_type is required")
        }
        // Step 2.
        let client = try await clients.resolve(parameters["client_id"])
        // Step 3.
        guard let grant = grants[grantType] else {
            throw LatchError(.unsupportedGrantType, "grant_type must be one of: \(grantTypes.joined(separator: ", "))")
        }
        do {
            return try await LatchTracing.span("token \(grantType)") { span in
                span?.attributes["latch.grant_type"] = grantType
                span?.attributes["latch.client_id"] = client.id
                do {
                    // Step 4.
                    let proof = try await dpop?.tokenEndpoint(headers: dpopHeaders, policy: client.evidence.dpop ?? .default, spend: !grant.spendsDPoPProof)
                    // Step 5.
                    let response = try await grant.exchange(TokenRequest(parameters: parameters, client: client, repeated: repeated, bearer: bearer, dpop: proof))
                    span?.attributes["latch.outcome"] = "ok"
                    return response
                } catch let error as LatchError {
                    span?.attributes["latch.outcome"] = error.code.rawValue
                    throw error
                }
            }
        } catch let error as LatchError where grantType != GrantType.refreshToken {
            // A refused sign-in is recorded on its own (a refused refresh is not a sign-in; its reuse is recorded by
            // the refresh grant). Its subject is the user only when the grant had verified their credential.
            await failures?.recordAlone(
                .signInFailed, actor: "anonymous", userID: error.verifiedSubject, clientID: client.id,
                detail: "grant=\(grantType) error=\(error.code.rawValue)")
            throw error
        }
    }
}
