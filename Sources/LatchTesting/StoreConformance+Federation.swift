import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Federation: upstream identity providers, web sessions, authorization codes and callbacks.
    static let federationChecks: [Check] = [
        Check(name: "federation: upstream identity providers round-trip (secret sealed bytes, settings JSON), ids are unique, deleting one ends its web sessions and keeps its users") { store, replica in
            let settings = UpstreamIdP.Settings(
                displayName: "Corp", issuer: "https://idp.example", clientId: "latch", clientAuthentication: .clientSecretBasic,
                scopes: ["openid", "email"], usernameClaim: "email", keptClaims: ["name"], allowedEmailDomains: ["example.com"], useUserinfo: true,
                algorithms: ["RS256"])
            let corp = UpstreamIdP(id: "corp", settings: settings, sealedSecret: Data([1, 2, 3]), createdAt: 10)
            let keyed = UpstreamIdP(id: "keyed", settings: settings, sealedSecret: nil, createdAt: 11)
            try await store.write {
                $0.insertUpstreamIdP(corp, ifTaken: Refusal.taken)
                $0.insertUpstreamIdP(keyed, ifTaken: Refusal.taken)
            }
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertUpstreamIdP(corp, ifTaken: Refusal.taken) } }
            #expect(try await replica.upstreamIdP(id: "corp") == corp)
            #expect(try await replica.upstreamIdPs() == [corp, keyed])
            let alice = User(id: "u-alice", username: "alice", kind: .oidc, issuer: "https://idp.example", subject: "a-1", claims: [:], createdAt: 1)
            try await store.write { $0.insertUser(alice, ifTaken: Refusal.taken) }
            let web = WebSession(
                id: "w1", userID: alice.id, upstreamIdP: "corp", authTime: 90, sealedUpstreamIDToken: Data([9]), createdAt: 100, expiresAt: 200)
            try await store.write { $0.insertWebSession(web) }
            #expect(try await replica.webSession(id: "w1") == web)
            #expect(try await replica.federatedUser(issuer: "https://idp.example", subject: "a-1")?.kind == .oidc)
            // Ending: once, only while active.
            #expect(try await replica.write { $0.endWebSession(id: "w1", at: 150) }.value == 1)
            #expect(try await store.write { $0.endWebSession(id: "w1", at: 151) }.value == 0)
            #expect(try await store.webSession(id: "w1")?.endedAt == 150)
            try await store.write { $0.insertWebSession(WebSession(id: "w2", userID: alice.id, upstreamIdP: "corp", authTime: 90, sealedUpstreamIDToken: nil, createdAt: 100, expiresAt: 200)) }
            #expect(try await store.write { $0.endWebSession(id: "w2", at: 200) }.value == 0, "an expired web session cannot be ended")
            await #expect(throws: Refusal.missing) { try await replica.write { $0.deleteUpstreamIdP(id: "nobody", ifMissing: Refusal.missing) } }
            try await replica.write { $0.deleteUpstreamIdP(id: "corp", ifMissing: Refusal.missing) }
            #expect(try await store.upstreamIdP(id: "corp") == nil)
            #expect(try await store.webSession(id: "w2") == nil)
            #expect(try await store.user(id: alice.id) != nil)
        },
        Check(name: "federation: web sessions go with their user, and housekeeping deletes expired ones") { store, replica in
            let settings = UpstreamIdP.Settings(
                displayName: "Corp", issuer: "https://idp.example", clientId: "latch", clientAuthentication: .privateKeyJWT, scopes: ["openid"],
                usernameClaim: "sub", keptClaims: [], allowedEmailDomains: nil, useUserinfo: false, algorithms: ["ES256"])
            try await store.write { $0.insertUpstreamIdP(UpstreamIdP(id: "corp", settings: settings, sealedSecret: nil, createdAt: 1), ifTaken: Refusal.taken) }
            try await register(store, user("alice"))
            try await register(store, user("bob"))
            try await store.write { unit in
                unit.insertWebSession(WebSession(id: "wa", userID: "u-alice", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 500))
                unit.insertWebSession(WebSession(id: "wb", userID: "u-bob", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 5000))
                unit.insertWebSession(WebSession(id: "wb2", userID: "u-bob", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 9000))
            }
            _ = try await replica.deleteUser(id: "u-bob")
            #expect(try await store.webSession(id: "wb") == nil)
            #expect(try await store.webSession(id: "wa") != nil)
            var rounds = 0
            while try await replica.purgeExpired(now: 500, limit: 1) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.webSession(id: "wa") == nil)
        },
        Check(name: "federation: an authorization code's id is spent once across replicas (ten redemptions at once: one session), and a callback's first sign-in creates one user") { store, replica in
            try await register(store, user("alice"))
            let alice = try #require(try await store.user(id: "u-alice"))
            let opened = await (0..<10).asyncConcurrentCount { index in
                let handle = pick(index, store, replica)
                do {
                    try await handle.write { unit in
                        unit.consume(.jti("code-1", issuer: "latch:authorization-code", until: 500), ifUnavailable: Refusal.used)
                        unit.requireUser(id: alice.id, ifMissing: Refusal.missing)
                        unit.insertSession(session("code-session-\(index)", user: alice))
                    }
                    return true
                } catch {
                    return false
                }
            }
            #expect(opened == 1)
            let sessions = try await (0..<10).asyncCount { try await replica.session(id: "code-session-\($0)") != nil }
            #expect(sessions == 1)
            // Ten callbacks of one upstream identity at once (distinct states): one user, the others find it taken.
            let created = await (0..<10).asyncConcurrentCount { index in
                let newcomer = User(
                    id: "u-oidc-\(index)", username: "carol", kind: .oidc, issuer: "https://idp.example", subject: "c-1", claims: [:], createdAt: 1)
                do {
                    try await pick(index, store, replica).write { unit in
                        unit.consume(.jti("state-\(index)", issuer: "latch:upstream-state", until: 500), ifUnavailable: Refusal.used)
                        unit.insertUser(newcomer, ifTaken: Refusal.taken)
                    }
                    return true
                } catch {
                    return false
                }
            }
            #expect(created == 1)
            #expect(try await store.federatedUser(issuer: "https://idp.example", subject: "c-1") != nil)
            // A refused unit spent nothing: the losers' states are still unspent.
            let unspent = try await (0..<10).asyncCount { try await replica.consume(.jti("state-\($0)", issuer: "latch:upstream-state", until: 500)) }
            #expect(unspent == 9)
        },
    ]
}
