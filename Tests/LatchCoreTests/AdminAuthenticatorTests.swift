import LatchCore
import LatchTesting
import Testing

@Suite("Admin tokens")
struct AdminAuthenticatorTests {
    @Test("Changing LATCH_ADMIN_TOKEN replaces the old environment token instead of adding one")
    func environmentRotation() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let first = AdminAuthenticator(store: store, clock: clock.clock)
        _ = try await first.bootstrap(configured: "first-token-0123456789", random: .seeded(1))
        #expect(try await first.isAdmin("first-token-0123456789"))
        let second = AdminAuthenticator(store: store, clock: clock.clock)
        _ = try await second.bootstrap(configured: "second-token-0123456789", random: .seeded(2))
        #expect(try await second.isAdmin("second-token-0123456789"))
        #expect(try await second.isAdmin("first-token-0123456789") == false)
        #expect(try await store.adminTokens().count == 1)
    }

    @Test("With no token configured and none stored, one is generated once and only its hash is kept")
    func generated() async throws {
        let store = InMemoryStore()
        let authenticator = AdminAuthenticator(store: store, clock: TestClock().clock)
        let token = try #require(try await authenticator.bootstrap(configured: nil, random: .seeded(3)))
        #expect(token.hasPrefix("lat_"))
        #expect(try await authenticator.isAdmin(token))
        #expect(try await store.adminTokens().allSatisfy { $0.hash == Secrets.hash(token) })
        #expect(try await authenticator.bootstrap(configured: nil, random: .seeded(4)) == nil)
        #expect(try await authenticator.isAdmin("lat_wrong") == false)
    }
}
