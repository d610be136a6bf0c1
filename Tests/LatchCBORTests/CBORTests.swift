import LatchCBOR
import Testing

/// `"0a1b"` → bytes.
func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

struct Vector: Sendable, CustomTestStringConvertible {
    let encoding: String
    let value: CBORValue
    var testDescription: String { encoding }
}

/// RFC 8949 Appendix A, the definite-length examples: each decodes to the value, and the value encodes back to the
/// same bytes (they are all in deterministic form).
let appendixA: [Vector] = [
    Vector(encoding: "00", value: .unsigned(0)), Vector(encoding: "01", value: .unsigned(1)), Vector(encoding: "0a", value: .unsigned(10)),
    Vector(encoding: "17", value: .unsigned(23)), Vector(encoding: "1818", value: .unsigned(24)), Vector(encoding: "1819", value: .unsigned(25)),
    Vector(encoding: "1864", value: .unsigned(100)), Vector(encoding: "1903e8", value: .unsigned(1000)),
    Vector(encoding: "1a000f4240", value: .unsigned(1_000_000)), Vector(encoding: "1b000000e8d4a51000", value: .unsigned(1_000_000_000_000)),
    Vector(encoding: "1bffffffffffffffff", value: .unsigned(.max)),
    Vector(encoding: "c249010000000000000000", value: .tagged(2, .bytes(hex("010000000000000000")))),
    Vector(encoding: "3bffffffffffffffff", value: .negative(.max)),
    Vector(encoding: "c349010000000000000000", value: .tagged(3, .bytes(hex("010000000000000000")))),
    Vector(encoding: "20", value: .int(-1)), Vector(encoding: "29", value: .int(-10)), Vector(encoding: "3863", value: .int(-100)),
    Vector(encoding: "3903e7", value: .int(-1000)),
    Vector(encoding: "f90000", value: .float(0.0)), Vector(encoding: "f98000", value: .float(-0.0)), Vector(encoding: "f93c00", value: .float(1.0)),
    Vector(encoding: "fb3ff199999999999a", value: .float(1.1)), Vector(encoding: "f93e00", value: .float(1.5)),
    Vector(encoding: "f97bff", value: .float(65504.0)), Vector(encoding: "fa47c35000", value: .float(100000.0)),
    Vector(encoding: "fa7f7fffff", value: .float(3.4028234663852886e+38)), Vector(encoding: "fb7e37e43c8800759c", value: .float(1.0e+300)),
    Vector(encoding: "f90001", value: .float(5.960464477539063e-8)), Vector(encoding: "f90400", value: .float(0.00006103515625)),
    Vector(encoding: "f9c400", value: .float(-4.0)), Vector(encoding: "fbc010666666666666", value: .float(-4.1)),
    Vector(encoding: "f97c00", value: .float(.infinity)), Vector(encoding: "f9fc00", value: .float(-.infinity)),
    Vector(encoding: "f4", value: .bool(false)), Vector(encoding: "f5", value: .bool(true)), Vector(encoding: "f6", value: .null),
    Vector(encoding: "f7", value: .undefined), Vector(encoding: "f0", value: .simple(16)), Vector(encoding: "f8ff", value: .simple(255)),
    Vector(encoding: "c074323031332d30332d32315432303a30343a30305a", value: .tagged(0, .text("2013-03-21T20:04:00Z"))),
    Vector(encoding: "c11a514b67b0", value: .tagged(1, .unsigned(1_363_896_240))),
    Vector(encoding: "c1fb41d452d9ec200000", value: .tagged(1, .float(1363896240.5))),
    Vector(encoding: "d74401020304", value: .tagged(23, .bytes([1, 2, 3, 4]))),
    Vector(encoding: "d818456449455446", value: .tagged(24, .bytes(hex("6449455446")))),
    Vector(encoding: "d82076687474703a2f2f7777772e6578616d706c652e636f6d", value: .tagged(32, .text("http://www.example.com"))),
    Vector(encoding: "40", value: .bytes([])), Vector(encoding: "4401020304", value: .bytes([1, 2, 3, 4])),
    Vector(encoding: "60", value: .text("")), Vector(encoding: "6161", value: .text("a")), Vector(encoding: "6449455446", value: .text("IETF")),
    Vector(encoding: "62225c", value: .text("\"\\")), Vector(encoding: "62c3bc", value: .text("\u{00fc}")),
    Vector(encoding: "63e6b0b4", value: .text("\u{6c34}")), Vector(encoding: "64f0908591", value: .text("\u{10151}")),
    Vector(encoding: "80", value: .array([])), Vector(encoding: "83010203", value: .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
    Vector(encoding: "8301820203820405", value: .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
    Vector(
        encoding: "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
        value: .array((1...25).map { .unsigned(UInt64($0)) })),
    Vector(encoding: "a0", value: .map([])),
    Vector(encoding: "a201020304", value: .map([.init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .unsigned(4))])),
    Vector(
        encoding: "a26161016162820203",
        value: .map([.init(.text("a"), .unsigned(1)), .init(.text("b"), .array([.unsigned(2), .unsigned(3)]))])),
    Vector(encoding: "826161a161626163", value: .array([.text("a"), .map([.init(.text("b"), .text("c"))])])),
    Vector(
        encoding: "a56161614161626142616361436164614461656145",
        value: .map(["a", "b", "c", "d", "e"].map { .init(.text($0), .text($0.uppercased())) })),
]

@Suite("CBOR (RFC 8949)")
struct CBORTests {
    @Test("Appendix A: decodes to the value and encodes back to the same bytes", arguments: appendixA)
    func appendix(_ vector: Vector) throws {
        let decoded = try CBORDecoder.decode(hex(vector.encoding))
        #expect(decoded == vector.value)
        #expect(vector.value.encoded == hex(vector.encoding))
    }

    @Test("NaN decodes as NaN and encodes as f97e00")
    func nan() throws {
        guard case .float(let value) = try CBORDecoder.decode(hex("f97e00")) else { Issue.record("not a float"); return }
        #expect(value.isNaN)
        #expect(CBORValue.float(.nan).encoded == hex("f97e00"))
    }

    @Test("Refused with a stable reason", arguments: [
        ("", "unexpected end"), ("18", "unexpected end"), ("1800", "shortest form"), ("190017", "shortest form"),
        ("5b00000000000000ff00", "shortest form"), ("5bffffffffffffffff", "runs past the end"), ("62c3", "runs past the end"),
        ("6280fe", "not UTF-8"), ("1c", "reserved"), ("fc", "reserved"), ("ff", "break"), ("5f4101ff", "indefinite"),
        ("9f01ff", "indefinite"), ("bf6161f5ff", "indefinite"), ("a2616101616102", "repeated"), ("f818", "two-byte form"),
        ("0000", "bytes after"), ("9bffffffffffffffff", "runs past the end"), ("bbffffffffffffffff", "runs past the end"),
    ])
    func refused(encoding: String, reason: String) {
        do {
            let value = try CBORDecoder.decode(hex(encoding))
            Issue.record("\(encoding) decoded as \(value)")
        } catch {
            #expect(error.reason.contains(reason), "\(encoding): \(error)")
        }
    }

    @Test("Nesting and item count are bounded")
    func bounds() {
        let deep = [UInt8](repeating: 0x81, count: 17) + [0x00]
        #expect(throws: CBORError.self) { try CBORDecoder.decode(deep) }
        #expect((try? CBORDecoder.decode([UInt8](repeating: 0x81, count: 16) + [0x00])) != nil)
        var limits = CBORDecoder.Limits()
        limits.maximumItems = 10
        let wide: [UInt8] = [0x8B] + [UInt8](repeating: 0x00, count: 11)
        #expect(throws: CBORError.self) { try CBORDecoder.decode(wide, limits: limits) }
    }

    @Test("A prefix decode reports where the item ends (authenticator data: a COSE key, then extensions)")
    func prefix() throws {
        let (value, end) = try CBORDecoder.decodePrefix(hex("a201020304") + [0xAA, 0xBB])
        #expect(value[.unsigned(1)] == .unsigned(2) && end == 5)
    }

    @Test("Encoding sorts map keys by their encoded bytes (RFC 8949 §4.2.1)")
    func deterministicMaps() {
        let map = CBORValue.map([.init(.text("aa"), .null), .init(.int(-1), .null), .init(.unsigned(10), .null), .init(.unsigned(100), .null)])
        // 0a < 1864 < 20 < 626161
        #expect(map.encoded == hex("a40af61864f620f6626161f6"))
    }

    /// Bounded fuzzing (seeded, 20,000 inputs): mutated valid encodings and random bytes never crash the decoder;
    /// whatever it accepts (without floats, which are taken in any width) has a stable deterministic encoding.
    @Test("Fuzz: mutations of the vectors and random bytes")
    func fuzz() {
        var generator = SplitMix64(seed: 0x1A7C4B0)
        let seeds = appendixA.map { hex($0.encoding) }
        var accepted = 0
        for round in 0..<20_000 {
            var input: [UInt8]
            if round % 4 == 0 {
                input = (0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            } else {
                input = seeds[Int(generator.next() % UInt64(seeds.count))]
                for _ in 0...Int(generator.next() % 4) {
                    guard !input.isEmpty else { break }
                    let position = Int(generator.next() % UInt64(input.count))
                    switch generator.next() % 3 {
                    case 0: input[position] = UInt8(truncatingIfNeeded: generator.next())
                    case 1: input.remove(at: position)
                    default: input.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                    }
                }
            }
            guard let value = try? CBORDecoder.decode(input) else { continue }
            accepted += 1
            // Map keys may come in any order (authenticators differ): what is accepted has a deterministic encoding
            // of the same length that decodes and encodes to itself.
            if !value.containsFloat {
                let encoded = value.encoded
                #expect((try? CBORDecoder.decode(encoded))?.encoded == encoded, "\(input)")
                #expect(encoded.count == input.count, "\(input): the deterministic form has another length")
            }
        }
        #expect(accepted > 1000, "the fuzzer reached too few valid inputs to mean much")
    }
}

extension CBORValue {
    var containsFloat: Bool {
        switch self {
        case .float: true
        case .array(let elements): elements.contains { $0.containsFloat }
        case .map(let pairs): pairs.contains { $0.key.containsFloat || $0.value.containsFloat }
        case .tagged(_, let content): content.containsFloat
        default: false
        }
    }
}

/// A small seeded generator (SplitMix64), so a failing fuzz case reproduces.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
