import LatchModel
/// The token endpoint (RFC 6749 §3.2): finds the client and the grant handler, and lets the handler answer.
public struct TokenEndpoint: Sendable {
    let grants: [String: any TokenGrant]
    let clients: ClientRegistry

    public init(grants: [any TokenGrant], clients: ClientRegistry) {
        self.grants = Dictionary(grants.map { ($0.grantType, $0) }, uniquingKeysWith: { first, _ in first })
        self.clients = clients
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
    /// - Step 3. The grant type is served (`unsupported_grant_type`), and its handler answers.
    public func exchange(_ parameters: [String: String], repeated: [String: [String]] = [:], bearer: String? = nil) async throws -> TokenResponse {
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
        return try await grant.exchange(TokenRequest(parameters: parameters, client: client, repeated: repeated, bearer: bearer))
    }
}
