import LatchCore
import LatchModel
import LatchTesting
import Testing

@Suite("Token endpoint (RFC 6749 §3.2)")
struct TokenEndpointTests {
    @Test("grant_type required; the client resolved before the grant; unknown grants name the served ones")
    func dispatch() async throws {
        let engines = try await Engines.make()
        await expectCode(.invalidRequest) { _ = try await engines.token([:]) }
        await expectCode(.invalidClient) { _ = try await engines.token(["grant_type": "password", "client_id": "ghost"]) }
        do {
            _ = try await engines.token(["grant_type": "password"])
            Issue.record("password grant answered")
        } catch let error as LatchError {
            #expect(error.code == .unsupportedGrantType && error.message.contains(GrantType.refreshToken) && error.message.contains(GrantType.jwtBearer))
        }
        #expect(engines.tokenEndpoint.grantTypes == [GrantType.refreshToken, GrantType.jwtBearer].sorted())
        await expectCode(.invalidRequest) { _ = try await engines.token(["grant_type": GrantType.jwtBearer]) }
        await expectCode(.invalidRequest) { _ = try await engines.token(["grant_type": GrantType.refreshToken, "refresh_token": ""]) }
    }

    @Test("Scopes: openid always, requested ones in order without repeats, an unknown one invalid_scope")
    func scopes() throws {
        let policy = ScopePolicy(allowed: ["openid", "profile", "offline_access"])
        #expect(try policy.grant(nil) == "openid")
        #expect(try policy.grant("profile openid profile offline_access") == "openid profile offline_access")
        #expect(throws: LatchError(.invalidScope, "")) { try policy.grant("admin") }
    }
}
