import Foundation
import LatchCore
import LatchModel
import LatchTesting
import Testing

@Suite("Admin tokens")
struct AdminTokenGateTests {
    @Test("Changing LATCH_ADMIN_TOKEN replaces the old environment token instead of adding one")
    func environmentRotation() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let first = AdminTokenGate(store: store, clock: clock.clock)
        _ = try await first.bootstrap(configured: "first-token-0123456789", random: .seeded(1))
        #expect(try await first.isAdmin("first-token-0123456789"))
        let second = AdminTokenGate(store: store, clock: clock.clock)
        _ = try await second.bootstrap(configured: "second-token-0123456789", random: .seeded(2))
        #expect(try await second.isAdmin("second-token-0123456789"))
        #expect(try await second.isAdmin("first-token-0123456789") == false)
        #expect(try await store.adminTokens().count == 1)
    }

    @Test("With no token configured and none stored, one is generated once and only its hash is kept")
    func generated() async throws {
        let store = InMemoryStore()
        let authenticator = AdminTokenGate(store: store, clock: TestClock().clock)
        let token = try #require(try await authenticator.bootstrap(configured: nil, random: .seeded(3)))
        #expect(token.hasPrefix("lat_"))
        #expect(try await authenticator.isAdmin(token))
        #expect(try await store.adminTokens().allSatisfy { $0.hash == Secrets.hash(token) })
        #expect(try await authenticator.bootstrap(configured: nil, random: .seeded(4)) == nil)
        #expect(try await authenticator.isAdmin("lat_wrong") == false)
    }

    @Test("Bootstrap tokens are owner tokens of the built-in account adm_root, which it creates")
    func bootstrapOwner() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let authenticator = AdminTokenGate(store: store, clock: clock.clock)
        let token = try #require(try await authenticator.bootstrap(configured: nil, random: .seeded(5)))
        #expect(try await authenticator.caller(of: token) == AdminCaller(tokenID: "bootstrap", accountID: AdminAccount.rootID, role: .owner))
        #expect(try await store.adminAccounts() == [AdminAccount.root(createdAt: clock.seconds)])
    }

    @Test("A token is refused from its expiry on, and when its account is gone")
    func expiryAndAccount() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let authenticator = AdminTokenGate(store: store, clock: clock.clock)
        _ = try await authenticator.bootstrap(configured: "an-environment-token-0123", random: .seeded(6))
        let now = clock.seconds
        try await store.putAdminToken(
            AdminTokenRecord(id: "t1", name: "ci", hash: Secrets.hash("expiring-token"), createdAt: now, role: .auditor, expiresAt: now + 10))
        try await store.putAdminToken(
            AdminTokenRecord(id: "t2", name: "orphan", hash: Secrets.hash("orphan-token"), createdAt: now, accountID: "adm_gone", role: .owner))
        try await authenticator.reload()
        #expect(try await authenticator.caller(of: "expiring-token")?.role == .auditor)
        #expect(try await authenticator.caller(of: "orphan-token") == nil)
        clock.advance(by: 9)
        #expect(try await authenticator.isAdmin("expiring-token"))
        clock.advance(by: 1)
        #expect(try await authenticator.isAdmin("expiring-token") == false)
        #expect(try await authenticator.isAdmin("an-environment-token-0123"))
    }
}

@Suite("Admin policy")
struct AdminPolicyTests {
    @Test("Default deny: a route the table lacks is refused to every role, owner included")
    func defaultDeny() {
        for role in AdminRole.allCases {
            #expect(throws: LatchError.forbidden("")) { try AdminPolicy.check(role, method: "GET", template: "/admin/v1/secret-new-thing") }
            #expect(throws: LatchError.forbidden("")) { try AdminPolicy.check(role, method: "PUT", template: "/admin/v1/users/{id}") }
        }
    }

    @Test("HEAD is checked as GET; the refusal names the roles that may")
    func headAndMessage() throws {
        try AdminPolicy.check(.support, method: "HEAD", template: "/admin/v1/users")
        do {
            try AdminPolicy.check(.auditor, method: "POST", template: "/admin/v1/users/{id}/sign-out")
            Issue.record("not refused")
        } catch {
            #expect(error.code == .forbidden)
            #expect(error.message == "this route needs the role owner, admin or support; this token's role is auditor")
        }
    }

    @Test("Roles are ordered owner > admin > support > auditor; auditor reads every GET route, writes none")
    func ordering() {
        #expect(AdminRole.allCases.sorted(by: >) == [.owner, .admin, .support, .auditor])
        for (route, roles) in AdminPolicy.table {
            #expect(roles.contains(.owner), "\(route)")
            #expect(roles.contains(.auditor) == route.hasPrefix("GET "), "\(route)")
            if !route.contains("/admins") { #expect(roles.contains(.admin), "\(route)") }
        }
    }
}
