import Foundation

/// The usernames Latch creates, in one normalised spelling, so that names which look alike are one name.
///
/// **Latch's own usernames** (test-key and device registrations, device sign-in): RFC 8265 §3.3
/// *UsernameCaseMapped* on the PRECIS IdentifierClass (RFC 8264 §9.1) — width mapping, lower case, NFC, then every
/// code point must be a letter or digit of any script or printable ASCII. Spaces, controls, format characters
/// (U+200B, U+FEFF, U+202E and every other bidi control), compatibility characters, unassigned code points and the
/// rest are refused. In place of RFC 5893's bidi rule Latch refuses the bidi controls themselves (an explicit
/// profile, documented in docs/security.md). Names are stored and compared in this form: `Alice`, `ALICE` and
/// `Ａｌｉｃｅ` are one user.
///
/// **Federated subjects** stay exact (OpenID Connect Core §5.7: `sub` is case-sensitive and compared as is), but
/// Latch only creates a user for one that is already NFC and holds no control, format, separator-other-than-space,
/// private-use or unassigned code point and no leading or trailing space — so a decomposed (NFD) twin or a name
/// hiding invisible characters is refused rather than becoming a second account.
public enum Usernames {
    /// Longest username, UTF-8 bytes.
    public static let maximumBytes = 255

    /// Why a username was refused.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// `raw` in Latch's normalised form (UsernameCaseMapped), or the reason it cannot be a username.
    public static func native(_ raw: String) throws(Refusal) -> String {
        guard !raw.isEmpty, raw.utf8.count <= 4 * maximumBytes else { throw Refusal(description: "must be 1–\(maximumBytes) bytes") }
        // Printable ASCII, the usual name: width mapping and NFC leave it as it is and every code point is PVALID
        // (ASCII7), so only the case changes: the general path's answer without Foundation's normalisers, which on
        // Linux took about 3 % of a key sign-in's server CPU (perf, 2026-11-27).
        if let lowered = printableASCIILowercased(raw) {
            guard lowered.utf8.count <= maximumBytes else { throw Refusal(description: "must be 1–\(maximumBytes) bytes") }
            return lowered
        }
        return try caseMapped(raw)
    }

    /// `raw` lower-cased when every byte is printable ASCII (U+0021–U+007E), else nil.
    static func printableASCIILowercased(_ raw: String) -> String? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(raw.utf8.count)
        for byte in raw.utf8 {
            guard (0x21...0x7E).contains(byte) else { return nil }
            bytes.append((0x41...0x5A).contains(byte) ? byte + 0x20 : byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The general path of ``native(_:)``: RFC 8264 §9.1's rules, in order, for any string.
    static func caseMapped(_ raw: String) throws(Refusal) -> String {
        // 1. Width mapping (RFC 8264 §9.1 rule 1): fullwidth and halfwidth forms to their ordinary ones.
        var widthMapped = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            if scalar.value == 0x3000 || (0xFF01...0xFFEE).contains(scalar.value) {
                widthMapped.append(contentsOf: String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars)
            } else {
                widthMapped.append(scalar)
            }
        }
        // 2. Case mapping (Unicode toLowerCase), 3. normalisation (NFC).
        let prepared = String(widthMapped).lowercased().precomposedStringWithCanonicalMapping
        guard prepared.utf8.count <= maximumBytes else { throw Refusal(description: "must be 1–\(maximumBytes) bytes") }
        // 4. Every code point must be PVALID in the IdentifierClass.
        var arabicIndic = false
        var extendedArabicIndic = false
        for scalar in prepared.unicodeScalars {
            if let problem = identifierClassProblem(scalar) { throw Refusal(description: problem) }
            if (0x0660...0x0669).contains(scalar.value) { arabicIndic = true }
            if (0x06F0...0x06F9).contains(scalar.value) { extendedArabicIndic = true }
        }
        // RFC 5892 Appendix A.8/A.9: the two sets of Arabic-Indic digits do not mix.
        guard !(arabicIndic && extendedArabicIndic) else { throw Refusal(description: "mixes Arabic-Indic and extended Arabic-Indic digits") }
        return prepared
    }

    /// Why `subject` cannot name a federated user, or nil when it can (it is kept exactly as given).
    public static func federatedProblem(_ subject: String) -> String? {
        guard !subject.isEmpty, subject.utf8.count <= maximumBytes else { return "must be 1–\(maximumBytes) bytes" }
        // Scalar by scalar: Swift's String == compares canonical equivalents as equal, which is the point here.
        // ASCII is always NFC.
        guard subject.utf8.allSatisfy({ $0 < 0x80 }) || subject.unicodeScalars.elementsEqual(subject.precomposedStringWithCanonicalMapping.unicodeScalars) else {
            return "is not in Unicode normalisation form C (NFC)"
        }
        guard subject.unicodeScalars.first != " ", subject.unicodeScalars.last != " " else { return "has a leading or trailing space" }
        for scalar in subject.unicodeScalars {
            let properties = scalar.properties
            switch properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                return "holds \(codePoint(scalar)), which is invisible or not a character"
            case .spaceSeparator where scalar != " ":
                return "holds \(codePoint(scalar)), a space other than U+0020"
            default:
                if properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint {
                    return "holds \(codePoint(scalar)), which is invisible or not a character"
                }
            }
        }
        return nil
    }

    /// RFC 8264 §9.1: nil when `scalar` is PVALID in the IdentifierClass (CONTEXTJ and CONTEXTO are refused).
    static func identifierClassProblem(_ scalar: Unicode.Scalar) -> String? {
        // ASCII7: printable ASCII, space excluded.
        if (0x21...0x7E).contains(scalar.value) { return nil }
        if scalar.value < 0x80 { return "holds \(codePoint(scalar)) (spaces and control characters are not allowed)" }
        if disallowedExceptions.contains(scalar.value) || contextual.contains(scalar.value) || isOldHangulJamo(scalar.value) {
            return "holds \(codePoint(scalar)), which usernames may not contain"
        }
        let properties = scalar.properties
        if properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint {
            return "holds \(codePoint(scalar)), which is invisible or not a character"
        }
        // HasCompat: a character with a compatibility decomposition is another spelling of something else.
        if String(scalar).precomposedStringWithCompatibilityMapping != String(scalar) {
            return "holds \(codePoint(scalar)), a compatibility character (use the ordinary form)"
        }
        switch properties.generalCategory {
        case .lowercaseLetter, .uppercaseLetter, .otherLetter, .decimalNumber, .modifierLetter, .nonspacingMark, .spacingMark:
            return nil
        case .spaceSeparator: return "holds \(codePoint(scalar)), a space"
        case .unassigned: return "holds \(codePoint(scalar)), which Unicode does not assign"
        default: return "holds \(codePoint(scalar)), which usernames may not contain (letters, digits and printable ASCII only)"
        }
    }

    /// RFC 5892 §2.6 exceptions that are DISALLOWED although their category is a letter.
    static let disallowedExceptions: Set<UInt32> = [0x0640, 0x07FA, 0x302E, 0x302F, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303B]
    /// CONTEXTJ (ZWNJ, ZWJ) and CONTEXTO code points, refused rather than checked in context.
    static let contextual: Set<UInt32> = [0x200C, 0x200D, 0x00B7, 0x0375, 0x05F3, 0x05F4, 0x30FB]

    static func isOldHangulJamo(_ value: UInt32) -> Bool {
        (0x1100...0x11FF).contains(value) || (0xA960...0xA97F).contains(value) || (0xD7B0...0xD7FF).contains(value)
    }

    static func codePoint(_ scalar: Unicode.Scalar) -> String {
        "U+" + String(repeating: "0", count: max(0, 4 - String(scalar.value, radix: 16).count)) + String(scalar.value, radix: 16, uppercase: true)
    }
}
