import Hummingbird
import NIOCore
import LatchCore
import LatchModel

/// The request context of every route: who is calling, once an authenticator has found out.
public struct LatchRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `AccessTokenMiddleware` on signed-in routes.
    var caller: SignedInCaller?
    /// Set by `AdminTokenMiddleware` on admin routes: the admin token presented, its account and role.
    var admin: AdminCaller?
    /// The peer's address (the key of rate limits); with `rateLimit.trustForwardedFor`, the middleware replaces it
    /// with the first `X-Forwarded-For` address.
    var clientAddress: String {
        get { client.description }
        set { client = ClientAddress(newValue) }
    }
    /// ``clientAddress``, formatted when read: most requests (a JWKS fetch, a refresh) never read it.
    private(set) var client: ClientAddress

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = ClientAddress(source.channel)
    }

    /// Bodies are capped at 64 KiB.
    public var maxUploadSize: Int { RequestLimits.maximumBody }
}

/// A client's address, formatted when read: the connection's peer (`unknown` when it has none) or an address a
/// trusted proxy forwarded.
struct ClientAddress: CustomStringConvertible, Sendable {
    private let channel: (any Channel)?
    private let text: String?

    init(_ channel: any Channel) {
        self.channel = channel
        text = nil
    }

    init(_ text: String) {
        channel = nil
        self.text = text
    }

    var description: String { text ?? channel?.remoteAddress?.ipAddress ?? "unknown" }
}

/// Size limits on input.
public enum RequestLimits {
    /// Largest accepted request body.
    public static let maximumBody = 64 * 1024
    /// Largest header field (name and value), bytes.
    public static let maximumHeaderField = 8 * 1024
    /// Largest request head (all header fields), bytes.
    public static let maximumHeaders = 16 * 1024
    /// Most header fields in one request.
    public static let maximumHeaderCount = 100
}

/// The context of signed-in routes: the caller is known and live.
struct SignedInContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let caller: SignedInCaller

    init(context: LatchRequestContext) throws {
        guard let caller = context.caller else { throw LatchError.invalidToken("a bearer access token is required") }
        self.coreContext = context.coreContext
        self.caller = caller
    }

    var maxUploadSize: Int { RequestLimits.maximumBody }
}

/// The context of admin routes: the caller presented a live admin token.
struct AdminContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    /// Who is calling: the token, its account and its role.
    let caller: AdminCaller
    /// The id of the admin token that authenticated the request.
    var tokenID: String { caller.tokenID }
    /// The admin account the token belongs to.
    var accountID: String { caller.accountID }
    /// The role the token carries.
    var role: AdminRole { caller.role }

    init(context: LatchRequestContext) throws {
        guard let caller = context.admin else { throw LatchError(.unauthorized, "an admin token is required") }
        self.coreContext = context.coreContext
        self.caller = caller
    }

    var maxUploadSize: Int { RequestLimits.maximumBody }
}
