import LatchAttestation
import Testing

/// Bounded, deterministic mutation fuzzing. Every mutated input must either parse or throw
/// `AndroidKeyDescriptionError` (typed throws makes the error type a compile-time fact; the
/// point here is that nothing traps). Inputs that parse must also re-encode to a fixed point.
@Suite("Android KeyDescription: bounded fuzz")
struct AndroidKeyDescriptionFuzzTests {
    typealias KD = AndroidKeyDescription

    static let iterations = 20_000
    static let seeds: [[UInt8]] = [
        RealDeviceVectors.teguTEEv400,
        RealDeviceVectors.caimanTEEv400,
        RealDeviceVectors.bluelineTEEv3,
        RealDeviceVectors.marlinSoftwareV2,
        RealDeviceVectors.tagsNotAscending,
        RealDeviceVectors.berDeviceLocked,
        AndroidKeyDescriptionRoundTripTests.full.derEncoded(),
    ]

    static func mutate(_ input: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let rounds = Int.random(in: 1...3, using: &rng)
        for _ in 0..<rounds {
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:  // flip one to four bits
                guard !bytes.isEmpty else { continue }
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let index = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                }
            case 1:  // truncate
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            case 2:  // insert random bytes
                let at = Int.random(in: 0...bytes.count, using: &rng)
                let count = Int.random(in: 1...8, using: &rng)
                bytes.insert(contentsOf: (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            case 3:  // delete a range
                guard !bytes.isEmpty else { continue }
                let start = Int.random(in: 0..<bytes.count, using: &rng)
                let end = min(bytes.count, start + Int.random(in: 1...16, using: &rng))
                bytes.removeSubrange(start..<end)
            case 4:  // overwrite with an interesting value (length / tag / sign boundaries)
                guard !bytes.isEmpty else { continue }
                let interesting: [UInt8] = [0x00, 0x01, 0x1F, 0x30, 0x31, 0x7F, 0x80, 0x81, 0x82, 0x84, 0xBF, 0xFF]
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = interesting.randomElement(using: &rng)!
            case 5:  // duplicate a slice in place
                guard !bytes.isEmpty else { continue }
                let start = Int.random(in: 0..<bytes.count, using: &rng)
                let end = min(bytes.count, start + Int.random(in: 1...32, using: &rng))
                bytes.insert(contentsOf: bytes[start..<end], at: start)
            case 6:  // increment / decrement a byte (nudges lengths and tags)
                guard !bytes.isEmpty else { continue }
                let index = Int.random(in: 0..<bytes.count, using: &rng)
                bytes[index] = Bool.random(using: &rng) ? bytes[index] &+ 1 : bytes[index] &- 1
            default:  // splice in a chunk of another seed
                let other = Self.seeds.randomElement(using: &rng)!
                let start = Int.random(in: 0..<other.count, using: &rng)
                let end = min(other.count, start + Int.random(in: 1...48, using: &rng))
                let at = Int.random(in: 0...bytes.count, using: &rng)
                bytes.insert(contentsOf: other[start..<end], at: at)
            }
        }
        return bytes
    }

    @Test("20,000 seeded mutations never trap; parses re-encode to a fixed point")
    func mutations() throws {
        var rng = SplitMix64(seed: 0xA77E_57A7_1075)
        var parsed = 0
        var reasons: [String: Int] = [:]
        for iteration in 0..<Self.iterations {
            let seed = Self.seeds[iteration % Self.seeds.count]
            let input = Self.mutate(seed, using: &rng)
            do {
                let kd = try KD(extensionValue: input)
                parsed += 1
                // Re-encoding a parsed value must itself parse, and be stable from then on.
                let once = kd.derEncoded()
                let normalized = try KD(extensionValue: once)
                #expect(normalized.derEncoded() == once, "iteration \(iteration)")
            } catch {
                reasons[error.reason, default: 0] += 1
                #expect(AndroidKeyDescriptionError.Code(rawValue: error.reason) != nil)
            }
        }
        // The mutator reaches both outcomes and several distinct refusal reasons.
        #expect(parsed > 100)
        #expect(reasons[AndroidKeyDescriptionError.Code.malformed.rawValue, default: 0] > 1_000)
        #expect(reasons.count >= 3, "reasons seen: \(reasons)")
    }

    @Test("random byte strings never trap (2,000 cases)")
    func randomBytes() {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            var input = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Half of them start like a SEQUENCE so the parser gets past the first byte.
            if Bool.random(using: &rng), !input.isEmpty {
                input[0] = 0x30
                if input.count > 1 { input[1] = UInt8(input.count - 2 < 0x80 ? input.count - 2 : 0x7F) }
            }
            _ = refusal(input)
        }
    }
}
