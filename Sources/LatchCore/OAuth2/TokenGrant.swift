import LatchJOSE
import LatchModel

/// A token request as a grant handler sees it: its form parameters and the client it names.
public struct TokenRequest: Sendable {
    /// Form parameters, each present at most once.
    public let parameters: [String: String]
    /// The resolved client (the default one when the request names none).
    public let client: Client
    /// Parameters a grant lets the request repeat (e.g. `issuer_token`), in request order.
    public let repeated: [String: [String]]
    /// The access token of `Authorization: Bearer`, for grants that act on a signed-in session.
    public let bearer: String?
    /// The request's DPoP proof (RFC 9449), checked and spent: the tokens issued are bound to its key.
    public let dpop: DPoP.Proof?

    public init(
        parameters: [String: String], client: Client, repeated: [String: [String]] = [:], bearer: String? = nil, dpop: DPoP.Proof? = nil
    ) {
        self.parameters = parameters
        self.client = client
        self.repeated = repeated
        self.bearer = bearer
        self.dpop = dpop
    }

    /// The client's DPoP policy.
    public var dpopPolicy: DPoPPolicy { client.evidence.dpop ?? .default }

    /// Every value of a repeatable parameter, in request order.
    public func values(_ name: String) -> [String] {
        repeated[name] ?? parameters[name].map { [$0] } ?? []
    }

    /// A parameter the grant cannot do without (RFC 6749 §5.2 `invalid_request` when absent or empty).
    public func required(_ name: String) throws(LatchError) -> String {
        guard let value = parameters[name], !value.isEmpty else {
            throw LatchError.invalidRequest("\(name) is required for this grant_type")
        }
        return value
    }
}

/// One grant type of the token endpoint (RFC 6749 §4–6 and its extensions). A new grant is a new type
/// conforming to this, registered with ``TokenEndpoint``.
public protocol TokenGrant: Sendable {
    /// The `grant_type` value this handler answers.
    var grantType: String { get }
    /// Whether the grant spends the DPoP proof's `jti` itself, inside its own write (the refresh grant, to keep one
    /// write per refresh); otherwise the token endpoint spends it before the grant runs.
    var spendsDPoPProof: Bool { get }
    func exchange(_ request: TokenRequest) async throws -> TokenResponse
}

extension TokenGrant {
    public var spendsDPoPProof: Bool { false }
}
