import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Keys and clients: issuer keys, test registration keys, clients, signing keys, client evidence.
    static let keyChecks: [Check] = [
        Check(name: "issuer keys, test registration keys and clients: add once, find, list, delete") { store, _ in
            let issuer = SignOnIssuerKey(issuer: "acme", keyID: "k1", key: TestKeys.rsa.publicKey, audience: "aud", allowedClaims: ["c"], maxLifetime: 60, createdAt: 5)
            #expect(try await store.addIssuerKey(issuer))
            #expect(try await store.addIssuerKey(issuer) == false)
            #expect(try await store.addIssuerKey(SignOnIssuerKey(issuer: "acme", keyID: "k2", key: TestKeys.p256.publicKey, audience: "aud", allowedClaims: [], maxLifetime: 60, createdAt: 6)))
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1")?.allowedClaims == ["c"])
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k2")?.key.algorithm == .ES256)
            #expect(try await store.issuerKeys().map(\.keyID) == ["k1", "k2"])
            #expect(try await store.deleteIssuer("acme", keyID: "k2") == 1)
            #expect(try await store.deleteIssuer("acme", keyID: nil) == 1)
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1") == nil)
            let testKey = TestRegistrationKey(keyID: "register_key", key: TestKeys.rsa.publicKey, createdAt: 5)
            #expect(try await store.addTestRegistrationKey(testKey))
            #expect(try await store.addTestRegistrationKey(testKey) == false)
            #expect(try await store.testRegistrationKey(id: "register_key")?.key.algorithm == .RS256)
            #expect(try await store.testRegistrationKeys().map(\.keyID) == ["register_key"])
            #expect(try await store.deleteTestRegistrationKey(id: "register_key"))
            #expect(try await store.deleteTestRegistrationKey(id: "register_key") == false)
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)))
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)) == false)
            let alice = user("alice")
            try await register(store, alice)
            try await start(store, session("s1", user: alice, client: "ios"))
            #expect(try await store.deleteClient(id: "ios"))
            #expect(try await store.deleteClient(id: "ios") == false)
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await store.clients().isEmpty)
        },
        Check(name: "signing keys: activating one retires the rest of its algorithm in the same step, not another algorithm's; retired keys are deleted after a cutoff") { store, _ in
            func record(_ id: String, at: Int64, _ algorithm: JWSAlgorithm = .ES256) -> SigningKeyRecord {
                let key = algorithm == .RS256 ? TestKeys.rsa.publicKey : TestKeys.p256.publicKey
                return SigningKeyRecord(keyID: id, algorithm: algorithm, sealedPrivateKey: Data([1]), publicKeyDER: key.derRepresentation, createdAt: at, retiredAt: nil)
            }
            try await store.activateSigningKey(record("a", at: 10))
            try await store.activateSigningKey(record("r", at: 15, .RS256))
            try await store.activateSigningKey(record("b", at: 20))
            var keys = try await store.signingKeys()
            #expect(keys.map(\.keyID) == ["a", "r", "b"])
            #expect(keys.map(\.retiredAt) == [20, nil, nil])
            try await store.activateSigningKey(record("s", at: 30, .RS256))
            keys = try await store.signingKeys()
            #expect(keys.map(\.retiredAt) == [20, 30, nil, nil])
            #expect(try await store.deleteSigningKeys(retiredBefore: 21) == 1)
            #expect(try await store.signingKeys().map(\.keyID) == ["r", "b", "s"])
        },
        Check(name: "client evidence and signing certificates: stored, replaced, owned; deleting an owner or the client removes them") { store, replica in
            #expect(try await store.addClient(Client(id: "app", name: "App", createdAt: 1)))
            #expect(try await store.clients().first?.evidence == ClientEvidence())
            let evidence = ClientEvidence(
                ios: .init(appIds: ["TEAM.com.example"], appAttestEnvironment: "production"),
                android: .init(packageNames: ["com.example"], playIntegrity: .init(sealedDecryptionKey: "c2VhbGVk", verificationKey: "a2V5")))
            try await store.write { $0.updateClientEvidence(id: "app", evidence: evidence, ifMissing: Refusal.missing) }
            #expect(try await replica.clients().first?.evidence == evidence)
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.updateClientEvidence(id: "nobody", evidence: evidence, ifMissing: Refusal.missing) }
            }
            let first = SigningCertificate(clientID: "app", sha256: String(repeating: "a", count: 64), owner: "t1", createdAt: 2)
            let second = SigningCertificate(clientID: "app", sha256: String(repeating: "b", count: 64), owner: "t2", createdAt: 3)
            try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) }
            try await replica.write { $0.insertSigningCertificate(second, ifTaken: Refusal.taken) }
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) } }
            let orphan = SigningCertificate(clientID: "nobody", sha256: first.sha256, owner: "t1", createdAt: 2)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertSigningCertificate(orphan, ifTaken: Refusal.taken) } }
            #expect(try await store.signingCertificates() == [first, second])
            try await store.write { $0.deleteSigningCertificates(owner: "t1") }
            #expect(try await replica.signingCertificates() == [second])
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.deleteSigningCertificate(clientID: "app", sha256: first.sha256, ifMissing: Refusal.missing) }
            }
            try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) }
            try await store.write { $0.deleteSigningCertificate(clientID: "app", sha256: first.sha256, ifMissing: Refusal.missing) }
            #expect(try await store.deleteClient(id: "app"))
            #expect(try await store.signingCertificates().isEmpty)
        },
    ]
}
