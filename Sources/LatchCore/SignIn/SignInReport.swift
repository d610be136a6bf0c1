import LatchModel

/// Which sign-in method a token request used, told by the grant that decided it to whoever asked — metrics count
/// sign-ins by method (`latch_signins_total`), and the JWT-bearer grant carries more than one. Through a task-local:
/// a request that sets none pays nothing.
public final class SignInReport: Sendable {
    @TaskLocal public static var current: SignInReport?

    private let recorded = Locked<String?>(nil)

    public init() {}

    /// The method recorded during the request, if a grant recorded one.
    public var method: String? { recorded.withLock { $0 } }

    /// Records `method` on the current request's report, if it has one.
    public static func record(_ method: String) {
        current?.recorded.withLock { $0 = method }
    }
}
