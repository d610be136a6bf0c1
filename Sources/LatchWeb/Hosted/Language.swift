import Foundation

/// A language Latch's pages are written in.
public enum Language: String, Sendable, Hashable, CaseIterable {
    case english = "en"
    case german = "de"

    /// The first supported language of an `Accept-Language` header (RFC 9110 §12.5.4), in the order listed (weights
    /// are not compared); English when none is supported or the header is absent.
    public init(acceptLanguage: String?) {
        // Ten ranges at most: the header is the browser's, its length the client's choice.
        for range in (acceptLanguage ?? "").split(separator: ",").prefix(10) {
            let tag = range.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            if tag == "de" || tag.hasPrefix("de-") {
                self = .german
                return
            }
            if tag == "en" || tag.hasPrefix("en-") { break }
        }
        self = .english
    }
}
