import LatchCore
import LatchTesting
import Testing

@Suite("In-memory store")
struct InMemoryStoreTests {
    @Test("Store conformance", arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        let store = InMemoryStore()
        try await check.run(store, store)
    }

    @Test("Declares no connection pool (nothing to report to the pool metrics)")
    func noPool() {
        #expect(InMemoryStore().connectionPool == nil)
    }
}
