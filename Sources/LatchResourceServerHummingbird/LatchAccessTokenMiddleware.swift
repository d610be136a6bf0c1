import HTTPTypes
import Hummingbird
import LatchJOSE
import LatchResourceServer
import NIOCore

/// A request context that can hold the verified Latch access token: adopt it in your app's context, or use
/// ``LatchResourceRequestContext``.
///
/// ```swift
/// struct AppRequestContext: LatchAccessTokenRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var latchAccessToken: VerifiedAccessToken?
///     init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
/// }
/// ```
public protocol LatchAccessTokenRequestContext: RequestContext {
    /// Set by ``LatchAccessTokenMiddleware`` before the route's handler runs.
    var latchAccessToken: VerifiedAccessToken? { get set }
}

extension LatchAccessTokenRequestContext {
    /// The verified access token; throws `invalid_token` (401) when no ``LatchAccessTokenMiddleware`` set one (the route
    /// is not behind it).
    public func requireLatchAccessToken() throws(ResourceServerError) -> VerifiedAccessToken {
        guard let latchAccessToken else { throw ResourceServerError.missingToken() }
        return latchAccessToken
    }
}

/// A ready-made context for apps without their own: the core storage and the verified token.
public struct LatchResourceRequestContext: LatchAccessTokenRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var latchAccessToken: VerifiedAccessToken?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        latchAccessToken = nil
    }
}

/// Requires a valid Latch access token on every route behind it (a `Router` or a route group).
///
/// The token is checked by ``LatchResourceServer/AccessTokenVerifier`` — `Authorization: Bearer` or, for DPoP-bound
/// tokens, `Authorization: DPoP` with a `DPoP` proof for this request's method and URL (the verifier's external base URL
/// followed by the request's path). On success the token is put into the context (``LatchAccessTokenRequestContext``)
/// and, with DPoP nonces on, a DPoP-bound request's answer carries the current `DPoP-Nonce`. On failure it answers
/// itself: 400, 401, 403 or 503 with the `WWW-Authenticate` challenges of RFC 6750 / RFC 9449 / RFC 9470, `DPoP-Nonce`
/// when needed, and `{"error", "error_description"}`. A ``LatchResourceServer/ResourceServerError`` thrown by a handler
/// behind it (``LatchResourceServer/VerifiedAccessToken/requireRecentAuthentication(maxAge:)``,
/// ``LatchResourceServer/VerifiedAccessToken/requireScopes(_:)``) is answered the same way.
///
/// ```swift
/// let router = Router(context: LatchResourceRequestContext.self)
/// router.group("api").add(middleware: LatchAccessTokenMiddleware(verifier: verifier, requiredScopes: ["orders:read"]))
///     .get("orders") { _, context in try context.requireLatchAccessToken().subject }
/// ```
public struct LatchAccessTokenMiddleware<Context: LatchAccessTokenRequestContext>: RouterMiddleware {
    public let verifier: AccessTokenVerifier
    public let requiredScopes: Set<String>

    /// Checks tokens with `verifier`; each must grant every scope of `requiredScopes`.
    public init(verifier: AccessTokenVerifier, requiredScopes: Set<String> = []) {
        self.verifier = verifier
        self.requiredScopes = requiredScopes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let resourceRequest = ResourceRequest(
            method: request.method.rawValue, path: request.uri.path, authorization: request.headers[values: .authorization],
            dpop: request.headers[values: .dpop])
        let token: VerifiedAccessToken
        do {
            token = try await verifier.authenticate(resourceRequest, requiredScopes: requiredScopes)
        } catch {
            return error.response
        }
        var context = context
        context.latchAccessToken = token
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as ResourceServerError {
            response = error.response
        }
        if token.isDPoPBound, let nonce = verifier.currentDPoPNonce() {
            response.headers[.dpopNonce] = nonce
        }
        return response
    }
}

extension ResourceServerError {
    /// The answer for this error: its status, headers (`WWW-Authenticate`, `DPoP-Nonce`, `Retry-After`,
    /// `Cache-Control: no-store`) and JSON body.
    public var response: Response {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count + 1)
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        fields[.contentType] = "application/json"
        let status: HTTPResponse.Status =
            switch self.status {
            case 400: .badRequest
            case 403: .forbidden
            case 503: .serviceUnavailable
            default: .unauthorized
            }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }
}

extension HTTPField.Name {
    /// `DPoP` (RFC 9449 §4.1).
    static let dpop = HTTPField.Name(DPoP.headerName)!
    /// `DPoP-Nonce` (RFC 9449 §8.1).
    static let dpopNonce = HTTPField.Name(DPoP.nonceHeaderName)!
}
