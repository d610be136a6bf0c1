extension String {
    /// The string these bytes spell in UTF-8, or `nil` when they are not valid UTF-8 (no repair, no replacement
    /// characters): the check an untrusted byte string needs before it becomes text.
    ///
    /// Where the stdlib has `String(validating:as:)` (Swift 6.0: Linux, iOS 18, macOS 15) that does the work; on
    /// earlier Apple systems the bytes are decoded and must come back unchanged — any invalid sequence would have been
    /// replaced by U+FFFD, so the round trip fails exactly when the input is not valid UTF-8.
    /// Inlinable, so that callers in other modules get it specialised for their collection type (the parsers of
    /// request bodies run it on every request).
    @inlinable
    public init?(validatingUTF8 bytes: some Collection<UInt8>) {
        #if canImport(Synchronization)
        // The stdlib of Swift 6.0 and later: the initialiser exists (an SDK older than iOS 18 has no Synchronization).
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            guard let string = String(validating: bytes, as: UTF8.self) else { return nil }
            self = string
            return
        }
        #endif
        let decoded = String(decoding: bytes, as: UTF8.self)
        guard decoded.utf8.elementsEqual(bytes) else { return nil }
        self = decoded
    }
}
