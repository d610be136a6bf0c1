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
}
