import HTTPTypes
import Hummingbird
import LatchCore
import LatchJOSE
import LatchModel
import NIOCore

/// The well-known documents: OpenID Provider metadata (OpenID Connect Discovery 1.0 §4), the same document as OAuth
/// 2.0 Authorization Server Metadata (RFC 8414 §3), and the JWKS (RFC 7517 §5). One value answers both the router's
/// routes and the connections' fast path (``WellKnownFastPath``), so the two cannot answer differently.
public final class WellKnownDocuments: Sendable {
    /// One answer: its headers (without `Content-Length`, `Date` and `Server`, which the HTTP layer adds) and body.
    public struct Answer: Sendable {
        public var headers: HTTPFields
        public var body: ByteBuffer
        /// The route template it is counted under in `latch_http_requests_total`, as the router names it.
        public var route: String
    }

    static let metadataPath = "/.well-known/openid-configuration"
    static let serverMetadataPath = "/.well-known/oauth-authorization-server"
    static let keySetPath = "/.well-known/jwks.json"

    private let metadata: Answer
    private let serverMetadata: Answer
    private let keys: SigningKeyRing
    /// The key set's answer, made again only when the ring's key set changes (a rotation or a reload gives the ring a
    /// new array; the same array compares equal by identity, without reading its bytes).
    private let keySet = Locked<(bytes: [UInt8], answer: Answer)?>(nil)

    init(metadata bytes: [UInt8], keys: SigningKeyRing) {
        let body = JSONResponse.withNewline(bytes)
        metadata = Answer(headers: Self.headers, body: body, route: Self.metadataPath)
        // RFC 8414 §3: the same document as OAuth 2.0 Authorization Server Metadata (every member it uses is registered
        // there or in OpenID Connect Discovery 1.0 §3, which RFC 8414 §2 takes in).
        serverMetadata = Answer(headers: Self.headers, body: body, route: Self.serverMetadataPath)
        self.keys = keys
    }

    /// The documents of `services`' deployment.
    public convenience init(_ services: LatchServices) {
        self.init(
            metadata: DiscoveryMetadata.document(
                issuer: services.settings.issuer, algorithms: services.keys.idTokenAlgorithms.map(\.rawValue), scopes: services.settings.scopes,
                grantTypes: services.tokens.grantTypes, proofTypes: services.registration.proofTypes, dpop: services.tokens.dpop != nil),
            keys: services.keys)
    }

    /// Public and cacheable: the metadata never changes while the server runs; the key set is cached briefly, since
    /// verifiers refetch on an unknown `kid` anyway and a rotation stays visible within minutes.
    private static let headers: HTTPFields = [.contentType: "application/json", .cacheControl: "public, max-age=300"]

    /// The answer for a request path (without its query), or nil when it names no document.
    public func answer(path: Substring) -> Answer? {
        switch path {
        case Self.metadataPath: metadata
        case Self.serverMetadataPath: serverMetadata
        case Self.keySetPath: keySetAnswer()
        default: nil
        }
    }

    private func keySetAnswer() -> Answer {
        let current = keys.jwksJSON
        if let hit = keySet.withLock({ $0 }), hit.bytes == current { return hit.answer }
        let answer = Answer(headers: Self.headers, body: JSONResponse.withNewline(current), route: Self.keySetPath)
        keySet.withLock { $0 = (current, answer) }
        return answer
    }

    /// The routes (the fast path answers the plain requests before they reach them; see ``WellKnownFastPath``).
    var endpoints: RouteCollection<LatchRequestContext> {
        @Sendable func response(_ answer: Answer) -> Response {
            Response(status: .ok, headers: answer.headers, body: .init(byteBuffer: answer.body))
        }
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get(RouterPath(Self.metadataPath)) { [metadata] _, _ in response(metadata) }
        routes.get(RouterPath(Self.serverMetadataPath)) { [serverMetadata] _, _ in response(serverMetadata) }
        routes.get(RouterPath(Self.keySetPath)) { [self] _, _ in response(keySetAnswer()) }
        return routes
    }
}
