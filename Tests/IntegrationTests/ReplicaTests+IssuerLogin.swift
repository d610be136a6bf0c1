import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ReplicaTests {
    @Test("Issuer login on two replicas: one token raced ten times logs in once; first logins of one consumer make one principal; logout-all is seen at once")
    func issuerLoginRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try await startTwoReplicas(directory)
        let key = try PrivateKey.generate(.ES256)
        let audience = "https://id.replicas.test/bank"
        let (created, _) = try await jsonRequest(
            "POST", a.base + "/admin/v1/login-issuers",
            body: AdminLoginIssuerRequest(
                issuerId: "bank", audience: audience, keys: [LoginIssuerKey(kid: "b1", algorithm: "ES256", publicKey: key.publicKey.pemRepresentation)]),
            bearer: Self.adminToken)
        #expect(created == 201)
        func issuerToken(_ consumer: String) throws -> String {
            try Assertions.issuerToken(issuer: "bank", keyID: "b1", consumers: [consumer], audience: audience, now: Int64(Date().timeIntervalSince1970))
                .sign(with: key)
        }
        // Replica b learns of the new issuer on its first unknown-issuer lookup.
        // 1. One token, ten logins at once across the replicas: one session.
        let token = try issuerToken("c-race")
        let logins = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, answer) = try? await Self.token(base, ["grant_type": GrantType.issuerLogin, "issuer_token": token]) else { return }
                    logins.add(status)
                    if let code = answer["error"]?.stringValue { logins.codes.withLock { _ = $0.insert(code) } }
                }
            }
        }
        #expect(logins[200] == 1 && logins[400] == 9, "\(logins.counts.withLock { $0 })")
        #expect(logins.codes.withLock { $0 } == ["invalid_grant"])

        // 2. Ten different tokens for one new consumer at once: ten sessions, one principal.
        final class Logins: Sendable {
            let subjects = Locked<Set<String>>([])
            let accessTokens = Locked<[String]>([])
        }
        let seen = Logins()
        let firsts = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let token = try? issuerToken("c-new"),
                        let (status, answer) = try? await Self.token(base, ["grant_type": GrantType.issuerLogin, "issuer_token": token])
                    else { return }
                    firsts.add(status)
                    if let access = answer["access_token"]?.stringValue { seen.accessTokens.withLock { $0.append(access) } }
                    if let id = answer["id_token"]?.stringValue, let sub = try? ParsedJWS(id).claims["sub"]?.stringValue {
                        seen.subjects.withLock { _ = $0.insert(sub) }
                    }
                }
            }
        }
        #expect(firsts[200] == 10, "\(firsts.counts.withLock { $0 })")
        #expect(seen.subjects.withLock { $0.count } == 1)

        // 3. logout-all on one replica: every session of the consumer is refused at once on the other.
        let sessions = seen.accessTokens.withLock { $0 }
        try #require(sessions.count == 10)
        let (loggedOut, revoked) = try await jsonRequest("POST", a.base + "/v1/me/logout-all", body: [String: String](), bearer: sessions[0])
        #expect(loggedOut == 200 && revoked["revoked"]?.intValue == 10)
        for access in sessions {
            let (status, _) = try await http("GET", b.base + "/v1/me", bearer: access)
            #expect(status == 401)
        }
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}
