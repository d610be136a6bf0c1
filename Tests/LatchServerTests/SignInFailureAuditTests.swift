import Foundation
import HTTPTypes
import LatchCore
import LatchModel
import LatchTesting
import Testing

/// Whose name a `signin.failed` record carries: the user's only when the grant had verified their credential.
@Suite("Refused sign-ins in the audit log")
struct SignInFailureAuditTests {
    static func failures(_ client: Client) async throws -> [AuditRecordView] {
        try await client.admin(.get, "/admin/v1/audit?limit=500&type=signin.failed").decode(AuditPage.self).records
    }

    @Test("A replayed, verified assertion is recorded with its user; a forged one naming the same user, or an unregistered subject, with no subject")
    func subjectOnlyAfterVerification() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            let amy = try await client.registerFederated(subject: "amy")
            // Forged: amy's name, another key's signature.
            let forged = try client.federatedAssertion(subject: "amy", key: TestKeys.rsa2)
            #expect(try await client.token(assertion: forged).code == "invalid_grant")
            var records = try await Self.failures(client)
            #expect(records.count == 1 && records.first?.subject == nil, "\(records.map { $0.subject ?? "-" })")
            // Signed by the issuer, for someone who is not registered: nobody to name.
            #expect(try await client.token(assertion: try client.federatedAssertion(subject: "nobody")).code == "invalid_grant")
            records = try await Self.failures(client)
            #expect(records.count == 2 && records.first?.subject == nil)
            // Genuine and verified, then refused because its jti was spent: amy's record.
            let assertion = try client.federatedAssertion(subject: "amy")
            #expect(try await client.token(assertion: assertion).status == .ok)
            #expect(try await client.token(assertion: assertion).code == "invalid_grant")
            records = try await Self.failures(client)
            #expect(records.count == 3)
            #expect(records.first?.subject == amy.userId && records.first?.actor == "anonymous" && records.first?.client == "default")
            #expect(records.first?.detail == "grant=\(GrantType.jwtBearer) error=invalid_grant")
        }
    }

    @Test("Issuer login: a replayed issuer token, every token verified, names the principal; a token with a foreign signature names nobody")
    func issuerLogin() async throws {
        try await Deployment.make().run { client in
            try await IssuerLoginFlowTests.addIssuers(client)
            let used = try IssuerLoginFlowTests.bankToken(client, ["c-7"])
            let first = try await IssuerLoginFlowTests.login(client, [used])
            #expect(first.status == .ok)
            let principal = try IssuerLoginFlowTests.claims(try first.decode(TokenResponse.self).idToken)["sub"]?.stringValue
            #expect(try await IssuerLoginFlowTests.login(client, [used]).code == "invalid_grant")
            var records = try await Self.failures(client)
            #expect(records.count == 1 && records.first?.subject == principal && principal != nil, "\(records.map { $0.subject ?? "-" })")
            let forged = try Assertions.issuerToken(
                issuer: "bank", keyID: "b1", consumers: ["c-7"], audience: IssuerLoginFlowTests.bankAudience, now: client.deployment.now
            ).sign(with: IssuerLoginFlowTests.otherKey)
            #expect(try await IssuerLoginFlowTests.login(client, [forged]).code == "invalid_grant")
            records = try await Self.failures(client)
            #expect(records.count == 2 && records.first?.subject == nil)
        }
    }
}
