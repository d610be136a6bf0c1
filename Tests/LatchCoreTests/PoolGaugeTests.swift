import LatchCore
import Testing

/// The PostgreSQL pool-use gauge: operations holding or waiting for a connection, and the peak between samples.
@Suite("Pool gauge")
struct PoolGaugeTests {
    @Test("Three operations at once on a pool of two: two in use, one waiting, peak three; the peak restarts from the current use")
    func counting() async throws {
        let gauge = PoolGauge(size: 2)
        #expect(gauge.sample() == PoolSample(size: 2, inUse: 0, waiting: 0, peak: 0))
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        // One release stream per operation (a stream has one consumer).
        let releases = (0..<3).map { _ in AsyncStream.makeStream(of: Void.self) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (release, _) in releases {
                group.addTask {
                    await gauge.counting {
                        startedContinuation.yield()
                        for await _ in release { break }
                    }
                }
            }
            var count = 0
            for await _ in started {
                count += 1
                if count == 3 { break }
            }
            #expect(gauge.sample() == PoolSample(size: 2, inUse: 2, waiting: 1, peak: 3))
            for (_, continuation) in releases { continuation.finish() }
            try await group.waitForAll()
        }
        #expect(gauge.sample() == PoolSample(size: 2, inUse: 0, waiting: 0, peak: 3), "the peak since the previous sample")
        #expect(gauge.sample() == PoolSample(size: 2, inUse: 0, waiting: 0, peak: 0))
        // A throwing operation is counted out too.
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await gauge.counting { throw Failure() } }
        #expect(gauge.sample().inUse == 0)
    }
}
