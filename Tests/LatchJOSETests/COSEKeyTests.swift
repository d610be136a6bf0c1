import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("COSE keys (RFC 9052 §7, RFC 9053, RFC 8230)")
struct COSEKeyTests {
    /// `"0a1b"` → bytes.
    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    /// RFC 8152 Appendix C.7.1: the P-256 public key of "meriadoc.brandybuck@buckland.example".
    static let x = hex("65eda5a12577c2bae829437fe338701a10aaa375e1bb5b5de108de439c08551d")
    static let y = hex("1e52ed75701163f7f9e40ddf9f341b3dc9ba860af7e0ca7ca7e9eecd0084d19c")

    static func ec2(alg: Int64? = -7, crv: Int64 = 1, x: [UInt8] = x, y: [UInt8] = y, extra: [CBORValue.Pair] = []) -> CBORValue {
        var pairs: [CBORValue.Pair] = [.init(.unsigned(1), .unsigned(2)), .init(.int(-1), .int(crv)), .init(.int(-2), .bytes(x)), .init(.int(-3), .bytes(y))]
        if let alg { pairs.append(.init(.unsigned(3), .int(alg))) }
        return .map(pairs + extra)
    }

    @Test("The RFC 8152 example key reads as an ES256 key with that point, through CBOR bytes and back")
    func rfcExample() throws {
        let bytes = Self.ec2().encoded
        let key = try PublicKey(coseKey: try CBORDecoder.decode(bytes))
        #expect(key.algorithm == .ES256)
        #expect(key.jwk(kid: "k").x == Base64URL.encode(Data(Self.x)) && key.jwk(kid: "k").y == Base64URL.encode(Data(Self.y)))
        #expect(key.coseKey.encoded == bytes)
    }

    @Test("Latch's own keys survive a COSE round trip, ES256 and RS256")
    func roundTrip() throws {
        for key in [TestKeys.p256.publicKey, TestKeys.rsa.publicKey] {
            let again = try PublicKey(coseKey: try CBORDecoder.decode(key.coseKey.encoded))
            #expect(again.derRepresentation == key.derRepresentation && again.algorithm == key.algorithm)
        }
    }

    @Test("Refused: no alg, a wrong curve or algorithm, a point off the curve, short coordinates, private parts, other types")
    func refusals() {
        var offCurve = Self.y
        offCurve[31] ^= 1
        let cases: [(String, CBORValue)] = [
            ("no alg", Self.ec2(alg: nil)), ("P-384", Self.ec2(crv: 2)), ("EdDSA on EC2", Self.ec2(alg: -8)),
            ("off the curve", Self.ec2(y: offCurve)), ("short x", Self.ec2(x: Array(Self.x.prefix(31)))),
            ("private d", Self.ec2(extra: [.init(.int(-4), .bytes(Self.x))])), ("OKP", .map([.init(.unsigned(1), .unsigned(1)), .init(.unsigned(3), .int(-8))])),
            ("not a map", .array([])), ("small RSA", .map([.init(.unsigned(1), .unsigned(3)), .init(.unsigned(3), .int(-257)), .init(.int(-1), .bytes([UInt8](repeating: 0xFF, count: 128))), .init(.int(-2), .bytes([1, 0, 1]))])),
        ]
        for (name, value) in cases {
            #expect(throws: JOSEError.self, "\(name)") { try PublicKey(coseKey: value) }
        }
    }
}
