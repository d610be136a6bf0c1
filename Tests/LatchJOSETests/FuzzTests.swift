import Foundation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Bounded fuzzing of untrusted input")
struct FuzzTests {
    /// Random byte mutations (1–4 per case) of `seed`.
    static func mutations(of seed: [UInt8], count: Int, seed generatorSeed: UInt64) -> [[UInt8]] {
        var generator = SplitMix(seed: generatorSeed)
        return (0..<count).map { _ in
            var bytes = seed
            for _ in 0..<Int(generator.next() % 4 + 1) where !bytes.isEmpty {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                }
            }
            return bytes
        }
    }

    @Test("2,000 mutated tokens: parsing and verifying never crash, and no mutation of a signed token verifies")
    func jws() throws {
        let key = TestKeys.p256
        let token = try JWTBuilder(header: ["kid": "k"], claims: ["iss": "acme", "sub": "alice", "exp": 1_790_000_000]).sign(with: key)
        var verified = 0
        for bytes in Self.mutations(of: Array(token.utf8), count: 2000, seed: 7) {
            let text = String(decoding: bytes, as: UTF8.self)
            guard let parsed = try? ParsedJWS(text) else { continue }
            if (try? parsed.verify(with: key.publicKey)) != nil, text != token { verified += 1 }
        }
        // A mutation may only verify if it decodes to the same bytes (base64url padding bits); none should here.
        #expect(verified == 0)
    }

    /// The base64url decoder Latch had before it worked on bytes (Foundation underneath): the reference.
    static func referenceDecode(_ string: String) -> Data? {
        var base64 = ""
        var last: UInt8 = 0
        for scalar in string.unicodeScalars {
            switch scalar {
            case "A"..."Z": last = UInt8(scalar.value - 65)
            case "a"..."z": last = UInt8(scalar.value - 97 + 26)
            case "0"..."9": last = UInt8(scalar.value - 48 + 52)
            case "-": last = 62
            case "_": last = 63
            default: return nil
            }
            base64.unicodeScalars.append(scalar == "-" ? "+" : scalar == "_" ? "/" : scalar)
        }
        switch base64.utf8.count % 4 {
        case 0: break
        case 2:
            guard last & 0x0F == 0 else { return nil }
            base64 += "=="
        case 3:
            guard last & 0x03 == 0 else { return nil }
            base64 += "="
        default: return nil
        }
        return Data(base64Encoded: base64)
    }

    @Test("10,000 random strings: the byte-level base64url decoder agrees with the reference, and encode/decode round-trips")
    func base64url() {
        var generator = SplitMix(seed: 64)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=. é")
        for round in 0..<10_000 {
            let length = Int(generator.next() % 24)
            // Mostly valid characters; now and then one from outside the alphabet.
            let text = String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(round % 5 == 0 ? alphabet.count : 64))] })
            #expect(Base64URL.decode(text) == Self.referenceDecode(text), "\(text)")
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == Data(bytes))
        }
    }
}
