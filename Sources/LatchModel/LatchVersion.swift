/// Latch's version, one source for `latch --version`, the SDK's `User-Agent` and the newest release in CHANGELOG.md
/// (a test checks all three agree). The server, the command line and the SDK are released together.
public enum LatchVersion {
    /// Semantic Versioning 2.0.0.
    public static let current = "0.1.0"

    /// What the SDK sends as `User-Agent` (RFC 9110 §10.1.5: product/version).
    public static let sdkUserAgent = "latch-swift/\(current)"
}
