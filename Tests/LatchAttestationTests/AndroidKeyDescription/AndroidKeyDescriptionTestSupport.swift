import LatchAttestation

/// Decodes hex split over several string literals (whitespace ignored). Test-only: traps on bad hex.
func hex(_ parts: String...) -> [UInt8] {
    let digits = parts.joined().filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        guard let byte = UInt8(digits[index..<next], radix: 16) else {
            preconditionFailure("bad hex \(digits[index..<next])")
        }
        bytes.append(byte)
        index = next
    }
    return bytes
}

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

/// Parses, returning the refusal instead of throwing (nil when the input parsed).
func refusal(_ input: [UInt8]) -> AndroidKeyDescriptionError? {
    do {
        _ = try AndroidKeyDescription(extensionValue: input)
        return nil
    } catch {
        return error
    }
}

/// Index of the first occurrence of `needle` in `haystack`.
func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard needle.count <= haystack.count else { return nil }
    for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
        return start
    }
    return nil
}

/// SplitMix64: small, seeded, deterministic; the same sequence on every platform.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Signing-certificate digest of the Google attestation-collector test app that appears in most
/// of the vectors below (base64 "EDk47kU35Z6O55L2VFBPuDRvxrNG0LvEQV/DOfz8jsE=").
let collectorSignatureDigest = hex("103938ee4537e59e8ee792f654504fb8346fc6b346d0bbc4415fc339fcfc8ec1")
