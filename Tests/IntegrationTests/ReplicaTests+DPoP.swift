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
    @Test("DPoP on two replicas: one proof raced ten times across them is accepted once; a bound refresh token needs its key on either")
    func dpopRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try await startTwoReplicas(directory)
        try await Self.setUp(a.base, users: ["dpop"])
        let key = try PrivateKey.generate(.ES256)
        let proof = try DPoP.proof(
            key: key, method: "POST", url: "https://id.replicas.test/oauth2/token", jti: UUID().uuidString, issuedAt: Int64(Date().timeIntervalSince1970))
        let outcomes = Tally()
        final class Refreshes: Sendable { let tokens = Locked<[String]>([]) }
        let refreshTokens = Refreshes()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let assertion = try? Self.assertion(subject: "dpop"),
                        let (status, answer) = try? await http(
                            "POST", base + "/oauth2/token", form: ["grant_type": GrantType.jwtBearer, "assertion": assertion], headers: ["DPoP": proof])
                    else { return }
                    outcomes.add(status)
                    if let code = answer["error"]?.stringValue { outcomes.codes.withLock { _ = $0.insert(code) } }
                    if let refresh = answer["refresh_token"]?.stringValue { refreshTokens.tokens.withLock { $0.append(refresh) } }
                }
            }
        }
        #expect(outcomes[200] == 1 && outcomes[400] == 9, "\(outcomes.counts.withLock { $0 })")
        #expect(outcomes.codes.withLock { $0 } == ["invalid_dpop_proof"])
        let refresh = try #require(refreshTokens.tokens.withLock { $0.first })
        func proofNow(_ signer: PrivateKey) throws -> String {
            try DPoP.proof(
                key: signer, method: "POST", url: "https://id.replicas.test/oauth2/token", jti: UUID().uuidString,
                issuedAt: Int64(Date().timeIntervalSince1970))
        }
        let (refused, answer) = try await http(
            "POST", b.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh],
            headers: ["DPoP": try proofNow(try PrivateKey.generate(.ES256))])
        #expect(refused == 400 && answer["error"] == "invalid_dpop_proof")
        let (rotated, _) = try await http(
            "POST", b.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh], headers: ["DPoP": try proofNow(key)])
        #expect(rotated == 200)
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}
