import LatchCore
import LatchModel

/// A small deterministic random generator (SplitMix64) for bounded, reproducible fuzzing.
public struct SplitMix: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RandomSource {
    /// A reproducible source for tests: SplitMix64 from `seed`. Never for production.
    public static func seeded(_ seed: UInt64) -> RandomSource {
        let generator = Locked(SplitMix(seed: seed))
        return RandomSource { count in
            generator.withLock { generator in (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) } }
        }
    }
}
