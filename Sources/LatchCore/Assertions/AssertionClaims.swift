import LatchModel

/// The registered claims of a JWT used as an authorization grant or registration proof, checked per
/// RFC 7523 §3. Times are NumericDate seconds (RFC 7519 §2); a value that looks like milliseconds is refused
/// by name rather than read as a date thousands of years away.
public struct AssertionClaims: Sendable {
    public var issuer: String
    public var subject: String
    public var audience: [String]
    public var jwtID: String
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// Every claim, for callers that copy custom ones.
    public var all: [String: JSONValue]

    /// Longest accepted `iss`, `sub`, `jti`.
    public static let maximumStringLength = 255

    /// A NumericDate above this is taken for milliseconds (it would be past year 5000).
    static let millisecondThreshold: Int64 = 100_000_000_000

    /// Checks the claims, throwing `code` (`invalid_grant` at the token endpoint, `invalid_proof` at registration).
    ///
    /// - Step 1. `iss`, `sub`, `jti`: non-empty strings of at most 255 bytes.
    /// - Step 2. `aud`: a string or array of strings naming `audience` (RFC 7523 §3 item 3).
    /// - Step 3. `iat` and `exp`: NumericDate seconds; a millisecond value is refused by name.
    /// - Step 4. `iat` not in the future, beyond skew.
    /// - Step 5. `exp` not passed, beyond skew (item 4).
    /// - Step 6. `nbf`, when present, reached.
    /// - Step 7. `exp - iat` positive and at most `maxLifetime` (item 5: no unreasonably long-lived assertions).
    ///
    /// `maximumSubjectLength` lets a profile whose `sub` lists several ids (issuer logins) take a longer one.
    public static func check(
        _ claims: [String: JSONValue], audience: String, now: Int64, skew: Int64, maxLifetime: Int64, code: ErrorCode,
        maximumSubjectLength: Int = maximumStringLength
    ) throws(LatchError) -> AssertionClaims {
        func fail(_ message: String) -> LatchError { LatchError(code, message) }
        func string(_ name: String) throws(LatchError) -> String {
            guard case .string(let value)? = claims[name] else { throw fail("the \(name) claim is missing or not a string") }
            let maximum = name == "sub" ? maximumSubjectLength : maximumStringLength
            guard !value.isEmpty, value.utf8.count <= maximum else {
                throw fail("the \(name) claim is empty or longer than \(maximum) bytes")
            }
            guard !value.containsControlCharacters else {
                throw fail("the \(name) claim contains control characters")
            }
            return value
        }
        func numericDate(_ name: String, required: Bool) throws(LatchError) -> Int64? {
            guard let value = claims[name] else {
                if required { throw fail("the \(name) claim is missing") }
                return nil
            }
            let seconds: Int64
            switch value {
            case .int(let int): seconds = int
            case .double(let double) where double.isFinite && abs(double) < 1e15: seconds = Int64(double.rounded(.down))
            default: throw fail("the \(name) claim is not a NumericDate")
            }
            guard seconds >= 0 else { throw fail("the \(name) claim is negative") }
            guard seconds < millisecondThreshold else {
                throw fail("the \(name) claim looks like milliseconds; JWT times are seconds since the epoch")
            }
            return seconds
        }

        // Step 1.
        let issuer = try string("iss")
        let subject = try string("sub")
        let jwtID = try string("jti")
        // Step 2.
        let audiences: [String]
        switch claims["aud"] {
        case .string(let single)?: audiences = [single]
        case .array(let many)? where many.allSatisfy({ $0.stringValue != nil }) && !many.isEmpty:
            audiences = many.compactMap(\.stringValue)
        case nil: throw fail("the aud claim is missing")
        default: throw fail("the aud claim is not a string or an array of strings")
        }
        guard audiences.contains(audience) else { throw fail("the aud claim does not name this service (\(audience))") }
        // Step 3.
        let issuedAt = try numericDate("iat", required: true)!
        let expiresAt = try numericDate("exp", required: true)!
        let notBefore = try numericDate("nbf", required: false)
        // Step 4.
        guard issuedAt <= now.adding(seconds: skew) else { throw fail("the iat claim is in the future") }
        // Step 5.
        guard expiresAt > now.adding(seconds: -skew) else { throw fail("the assertion has expired") }
        // Step 6.
        if let notBefore, notBefore > now.adding(seconds: skew) { throw fail("the assertion is not yet valid (nbf)") }
        // Step 7.
        guard expiresAt > issuedAt else { throw fail("exp is not after iat") }
        guard expiresAt - issuedAt <= maxLifetime else {
            throw fail("the assertion lives longer than the \(maxLifetime) s this issuer allows")
        }
        return AssertionClaims(
            issuer: issuer, subject: subject, audience: audiences, jwtID: jwtID, issuedAt: issuedAt,
            expiresAt: expiresAt, all: claims)
    }
}
