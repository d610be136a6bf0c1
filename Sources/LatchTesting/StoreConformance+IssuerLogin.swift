import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Issuer login: login issuers, resource servers, session consumers, issuer-login principals and races.
    static let issuerLoginChecks: [Check] = [
        Check(name: "login issuers: stored as given (static keys or a JWKS URL, scopes in order), listed by id; an id is taken once; deleted once") { store, replica in
            let bank = LoginIssuer(
                id: "bank", audience: "https://latch.example/issuers/bank",
                keysJSON: #"[{"kid":"k1","algorithm":"ES256","publicKey":"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"}]"#,
                jwksURL: nil, maxTokenLifetime: 300, allowedScopes: ["payments", "accounts", "profil-é"], customFederation: true, createdAt: 7)
            let acme = LoginIssuer(
                id: "acme", audience: "aud", keysJSON: "[]", jwksURL: "https://acme.example/.well-known/jwks.json", maxTokenLifetime: 60,
                allowedScopes: [], customFederation: false, createdAt: 8)
            try await store.write { $0.insertLoginIssuer(bank, ifTaken: Refusal.taken) }
            #expect(try await replica.addLoginIssuer(acme))
            #expect(try await replica.loginIssuer(id: "bank") == bank)
            #expect(try await store.loginIssuer(id: "acme") == acme)
            #expect(try await store.loginIssuer(id: "nobody") == nil)
            #expect(try await replica.loginIssuers() == [acme, bank])
            let twin = LoginIssuer(
                id: "bank", audience: acme.audience, keysJSON: acme.keysJSON, jwksURL: acme.jwksURL, maxTokenLifetime: acme.maxTokenLifetime,
                allowedScopes: acme.allowedScopes, customFederation: acme.customFederation, createdAt: acme.createdAt)
            #expect(try await replica.addLoginIssuer(twin) == false)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertLoginIssuer(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.loginIssuer(id: "bank") == bank)
            #expect(try await store.write { $0.deleteLoginIssuer(id: "bank") }.value == 1)
            #expect(try await replica.write { $0.deleteLoginIssuer(id: "bank") }.value == 0)
            #expect(try await replica.removeLoginIssuer(id: "acme"))
            #expect(try await store.removeLoginIssuer(id: "acme") == false)
            #expect(try await store.loginIssuers().isEmpty)
        },
        Check(name: "resource servers: stored with their secret's hash, listed by id; an id is taken once; deleted once") { store, replica in
            let gateway = ResourceServer(id: "lrs_gateway", name: "API gateway", secretHash: Data((0..<32).map { UInt8($0) }), createdAt: 3)
            let ledger = ResourceServer(id: "lrs_ledger", name: "Ledger", secretHash: Data(repeating: 0xAB, count: 32), createdAt: 4)
            try await replica.write { $0.insertResourceServer(ledger, ifTaken: Refusal.taken) }
            #expect(try await store.addResourceServer(gateway))
            #expect(try await replica.resourceServer(id: "lrs_gateway") == gateway)
            #expect(try await store.resourceServer(id: "lrs_nobody") == nil)
            #expect(try await store.resourceServers() == [gateway, ledger])
            let twin = ResourceServer(id: "lrs_ledger", name: "Other", secretHash: Data([1]), createdAt: 5)
            #expect(try await store.addResourceServer(twin) == false)
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertResourceServer(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.resourceServer(id: "lrs_ledger") == ledger)
            #expect(try await replica.write { $0.deleteResourceServer(id: "lrs_ledger") }.value == 1)
            #expect(try await store.write { $0.deleteResourceServer(id: "lrs_ledger") }.value == 0)
            #expect(try await store.removeResourceServer(id: "lrs_gateway"))
            #expect(try await replica.removeResourceServer(id: "lrs_gateway") == false)
            #expect(try await replica.resourceServers().isEmpty)
        },
        Check(name: "session consumers: added with their session, read sorted; a pair held already stays as it is; gone with their session's user, app or purge") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            let bank1 = ConsumerPair(issuer: "bank", consumer: "c-1")
            let bank2 = ConsumerPair(issuer: "bank", consumer: "c-2")
            let bank3 = ConsumerPair(issuer: "bank", consumer: "c-3")
            let acme = ConsumerPair(issuer: "acme", consumer: "z")
            try await store.write { transaction in
                transaction.insertSession(session("s1", user: alice))
                transaction.insertSessionConsumers(sessionID: "s1", [bank2, acme, bank1], at: 1000)
            }
            #expect(try await replica.sessionConsumers(sessionID: "s1") == [acme, bank1, bank2])
            #expect(try await store.sessionConsumers(sessionID: "nope").isEmpty)
            // Pairs held already (or twice in one list) are left as they are; new ones are added.
            try await replica.write { $0.insertSessionConsumers(sessionID: "s1", [bank2, bank3, bank3], at: 1100) }
            try await store.write { $0.insertSessionConsumers(sessionID: "s1", [acme], at: 1200) }
            #expect(try await store.sessionConsumers(sessionID: "s1") == [acme, bank1, bank2, bank3])
            // A refused unit keeps neither its session nor its pairs.
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.insertSession(session("s2", user: alice))
                    transaction.insertSessionConsumers(sessionID: "s2", [bank1], at: 1000)
                    transaction.requireUser(id: "nobody", ifMissing: Refusal.missing)
                }
            }
            #expect(try await store.session(id: "s2") == nil)
            #expect(try await replica.sessionConsumers(sessionID: "s2").isEmpty)
            // Purged with their session.
            try await store.write { transaction in
                transaction.insertSession(session("short", user: alice, lifetime: 10))
                transaction.insertSessionConsumers(sessionID: "short", [bank1], at: 1000)
            }
            var rounds = 0
            while try await replica.purgeExpired(now: 2000, limit: 100) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.session(id: "short") == nil)
            #expect(try await store.sessionConsumers(sessionID: "short").isEmpty)
            #expect(try await store.sessionConsumers(sessionID: "s1").count == 4)
            // Deleted with their app's sessions.
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)))
            try await store.write { transaction in
                transaction.insertSession(session("s3", user: alice, client: "ios"))
                transaction.insertSessionConsumers(sessionID: "s3", [bank1], at: 1000)
            }
            #expect(try await replica.deleteClient(id: "ios"))
            #expect(try await store.sessionConsumers(sessionID: "s3").isEmpty)
            // Deleted with their user's sessions.
            #expect(try await replica.deleteUser(id: alice.id))
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await store.sessionConsumers(sessionID: "s1").isEmpty)
        },
        Check(name: "issuer login race: 10 concurrent logins with one token on two replicas open one session with its consumers") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            let opened = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            try await pick(index, store, replica).write { transaction in
                                transaction.consume(.jti("same", issuer: "login-issuer", until: 9999), ifUnavailable: Refusal.used)
                                transaction.insertSession(session("s\(index)", user: alice))
                                transaction.insertSessionConsumers(
                                    sessionID: "s\(index)", [ConsumerPair(issuer: "login-issuer", consumer: "c-\(index)")], at: 1000)
                            }
                            return 1
                        } catch Refusal.used {
                            return 0
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(opened == 1)
            var withConsumers = 0
            for index in 0..<10 {
                let consumers = try await replica.sessionConsumers(sessionID: "s\(index)")
                if try await store.session(id: "s\(index)") != nil {
                    #expect(consumers == [ConsumerPair(issuer: "login-issuer", consumer: "c-\(index)")])
                    withConsumers += 1
                } else {
                    #expect(consumers.isEmpty)
                }
            }
            #expect(withConsumers == 1)
        },
        Check(name: "users: an issuer-login principal round-trips and is found by its issuer and consumer id, apart from Latch's own names") { store, replica in
            let principal = User(id: "u-login", username: "c-1", kind: .issuerLogin, issuer: "login:bank", subject: "c-1", claims: [:], createdAt: 5)
            try await store.write { $0.insertUser(principal, ifTaken: Refusal.taken) }
            #expect(try await replica.user(id: "u-login") == principal)
            #expect(try await replica.federatedUser(issuer: "login:bank", subject: "c-1") == principal)
            #expect(try await store.users(after: nil, limit: 10) == [principal])
            // Not one of Latch's own usernames, nor the custom federated issuer "bank"'s identity.
            #expect(try await store.user(username: "c-1") == nil)
            #expect(try await store.federatedUser(issuer: "bank", subject: "c-1") == nil)
            // The same consumer id at another login issuer is another principal; the same pair again is taken.
            let elsewhere = User(id: "u-login-2", username: "c-1", kind: .issuerLogin, issuer: "login:acme", subject: "c-1", claims: [:], createdAt: 6)
            try await replica.write { $0.insertUser(elsewhere, ifTaken: Refusal.taken) }
            let twin = User(id: "u-login-3", username: "c-1", kind: .issuerLogin, issuer: "login:bank", subject: "c-1", claims: [:], createdAt: 7)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertUser(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.federatedUser(issuer: "login:acme", subject: "c-1")?.kind == .issuerLogin)
        },
    ]
}
