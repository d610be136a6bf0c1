import Crypto
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// RFC 9449 at the gate, on the in-memory store: the client policy (off / allowed / required), the proof checks'
/// error mapping (`invalid_dpop_proof`, `use_dpop_nonce` with a `DPoP-Nonce` header), the `iat` window, stateless
/// nonces across windows, and the `jti` spent once per key (a refused proof spends nothing).
@Suite("DPoPGate on the in-memory store")
struct DPoPGateTests {
    static let issuer = "https://latch.test"
    static let tokenURL = issuer + "/oauth2/token"

    let store = InMemoryStore()
    let clock = TestClock()
    let key = TestKeys.p256

    func gate(requireNonce: Bool = false, nonceLifetime: Int64 = 300) -> DPoPGate {
        var settings = DPoPSettings(requireNonce: requireNonce)
        settings.nonceLifetime = nonceLifetime
        let nonces = DPoPNonces(
            key: KeySealer.derivedKey(from: [UInt8](repeating: 3, count: 32), purpose: "dpop test"), lifetime: settings.nonceLifetime, clock: clock.clock)
        return DPoPGate(store: store, settings: settings, nonces: nonces, issuer: Self.issuer, clock: clock.clock)
    }

    func proof(
        key: PrivateKey? = nil, method: String = "POST", url: String = tokenURL, accessToken: String? = nil, nonce: String? = nil,
        jti: String = UUID().uuidString, iat: Int64? = nil
    ) throws -> String {
        try DPoP.proof(
            key: key ?? self.key, method: method, url: url, accessToken: accessToken, nonce: nonce, jti: jti, issuedAt: iat ?? clock.seconds)
    }

    /// Expects `body` to throw `code`, answered at a resource when `atResource`; returns the error.
    @discardableResult
    func refused(_ code: ErrorCode, atResource: Bool = false, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async
        -> LatchError?
    {
        do {
            try await body()
            Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
        } catch let error as LatchError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.atResource == atResource, sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    // MARK: Policy

    @Test("Policy: off ignores any header; allowed without a proof gives bearer tokens; required without one is refused; nothing is spent")
    func policy() async throws {
        let gate = gate()
        #expect(try await gate.tokenEndpoint(headers: [try proof()], policy: DPoPPolicy(mode: .off)) == nil)
        #expect(try await gate.tokenEndpoint(headers: ["not even a JWT"], policy: DPoPPolicy(mode: .off)) == nil)
        #expect(try await gate.tokenEndpoint(headers: [], policy: .default) == nil)
        await refused(.invalidDPoPProof) { _ = try await gate.tokenEndpoint(headers: [], policy: DPoPPolicy(mode: .required)) }
        #expect(store.count(.usedJTIs) == 0)
    }

    @Test("A good proof at the token endpoint: the key's RFC 7638 thumbprint and jti, spent once; the same jti again is a replay")
    func spendsOnce() async throws {
        let gate = gate()
        let header = try proof(jti: "j-1")
        let accepted = try #require(try await gate.tokenEndpoint(headers: [header], policy: DPoPPolicy(mode: .required)))
        #expect(accepted.thumbprint == key.publicKey.thumbprint && accepted.jti == "j-1")
        #expect(accepted.rememberUntil == clock.seconds + 60 + 60)
        #expect(store.count(.usedJTIs) == 1)
        await refused(.invalidDPoPProof) { _ = try await gate.tokenEndpoint(headers: [header], policy: .default) }
        // A fresh proof with the same jti is refused too: the jti is spent per key, whatever the proof's other claims.
        clock.advance(by: 5)
        await refused(.invalidDPoPProof) { _ = try await gate.tokenEndpoint(headers: [try proof(jti: "j-1")], policy: .default) }
        #expect(store.count(.usedJTIs) == 1)
    }

    @Test("The same jti under another key is another proof: jtis are remembered per key thumbprint")
    func jtiPerKey() async throws {
        let gate = gate()
        _ = try await gate.tokenEndpoint(headers: [try proof(jti: "shared")], policy: .default)
        let other = try #require(try await gate.tokenEndpoint(headers: [try proof(key: TestKeys.p256b, jti: "shared")], policy: .default))
        #expect(other.thumbprint == TestKeys.p256b.publicKey.thumbprint)
        #expect(store.count(.usedJTIs) == 2)
    }

    @Test("spend: false checks the proof without spending its jti (the caller spends it in its own unit)")
    func checkWithoutSpending() async throws {
        let gate = gate()
        let header = try proof()
        let checked = try #require(try await gate.tokenEndpoint(headers: [header], policy: .default, spend: false))
        #expect(store.count(.usedJTIs) == 0)
        #expect(DPoPGate.spending(checked) == .jti(checked.jti, issuer: "dpop:" + checked.thumbprint, until: checked.rememberUntil))
        #expect(try await gate.tokenEndpoint(headers: [header], policy: .default) != nil)
        #expect(store.count(.usedJTIs) == 1)
    }

    // MARK: Proof checks → invalid_dpop_proof, writing nothing

    @Test(
        "Each bad proof is invalid_dpop_proof at the token endpoint and spends nothing",
        arguments: ["two headers", "not a JWT", "wrong method", "wrong URL", "other host", "too old", "in the future", "forged signature"])
    func badProofs(_ kind: String) async throws {
        let gate = gate()
        let now = clock.seconds
        let headers: [String]
        switch kind {
        case "two headers": headers = [try proof(), try proof()]
        case "not a JWT": headers = ["abc.def"]
        case "wrong method": headers = [try proof(method: "GET")]
        case "wrong URL": headers = [try proof(url: Self.issuer + "/v1/me")]
        case "other host": headers = [try proof(url: "https://elsewhere.test/oauth2/token")]
        case "too old": headers = [try proof(iat: now - 61)]
        case "in the future": headers = [try proof(iat: now + 61)]
        default:
            // The payload of one proof under the signature of another: real signatures, neither over this input.
            let one = try proof(jti: "a").split(separator: ".")
            let two = try proof(jti: "b").split(separator: ".")
            headers = [[one[0], one[1], two[2]].joined(separator: ".")]
        }
        await refused(.invalidDPoPProof) { _ = try await gate.tokenEndpoint(headers: headers, policy: .default) }
        #expect(store.count(.usedJTIs) == 0)
    }

    @Test("The iat window's edges are inside it: exactly maximumAge old and exactly futureSkew ahead are accepted")
    func iatEdges() async throws {
        let gate = gate()
        let now = clock.seconds
        #expect(try await gate.tokenEndpoint(headers: [try proof(iat: now - 60)], policy: .default) != nil)
        #expect(try await gate.tokenEndpoint(headers: [try proof(iat: now + 60)], policy: .default) != nil)
    }

    @Test("A proof's htu is compared normalised (case, default port), never with its query")
    func htuNormalised() async throws {
        let gate = gate()
        #expect(try await gate.tokenEndpoint(headers: [try proof(url: "HTTPS://LATCH.TEST:443/oauth2/token")], policy: .default) != nil)
    }

    // MARK: Nonces

    @Test("requireNonce: a proof without one, or with a made-up one, is use_dpop_nonce carrying the current nonce; with it, accepted")
    func nonceRequired() async throws {
        let gate = gate(requireNonce: true)
        let missing = await refused(.useDPoPNonce) { _ = try await gate.tokenEndpoint(headers: [try proof()], policy: .default) }
        let nonce = try #require(missing?.headers[DPoP.nonceHeaderName])
        #expect(nonce == gate.nonces.current())
        let madeUp = Base64URL.encode(Data(repeating: 0, count: 24))
        await refused(.useDPoPNonce) { _ = try await gate.tokenEndpoint(headers: [try proof(nonce: madeUp)], policy: .default) }
        #expect(store.count(.usedJTIs) == 0, "a proof refused for its nonce spends nothing")
        #expect(try await gate.tokenEndpoint(headers: [try proof(nonce: nonce)], policy: .default) != nil)
    }

    @Test("A nonce is good in its window and the next, then refused; another deployment's key never makes a good one")
    func nonceWindows() async throws {
        let gate = gate(requireNonce: true, nonceLifetime: 100)
        let nonce = gate.nonces.current()
        #expect(gate.nonces.isValid(nonce))
        clock.advance(by: 100)
        #expect(gate.nonces.isValid(nonce), "the window after the nonce's")
        #expect(try await gate.tokenEndpoint(headers: [try proof(nonce: nonce)], policy: .default) != nil)
        clock.advance(by: 100)
        #expect(!gate.nonces.isValid(nonce), "two windows on")
        await refused(.useDPoPNonce) { _ = try await gate.tokenEndpoint(headers: [try proof(nonce: nonce)], policy: .default) }
        let stranger = DPoPNonces(key: SymmetricKey(size: .bits256), lifetime: 100, clock: clock.clock)
        #expect(!gate.nonces.isValid(stranger.current()))
    }

    @Test("Without requireNonce, a proof with a stale nonce is still told to use the current one")
    func staleNonceOptional() async throws {
        let gate = gate(nonceLifetime: 10)
        let stale = gate.nonces.current()
        clock.advance(by: 20)
        let error = await refused(.useDPoPNonce) { _ = try await gate.tokenEndpoint(headers: [try proof(nonce: stale)], policy: .default) }
        #expect(error?.headers[DPoP.nonceHeaderName] == gate.nonces.current())
        #expect(try await gate.tokenEndpoint(headers: [try proof()], policy: .default) != nil, "no nonce at all is fine")
    }

    // MARK: Resource endpoints

    @Test("At a resource: the proof must name the method, path and ath of the token presented; refusals are answered at the resource")
    func resource() async throws {
        let gate = gate()
        let url = Self.issuer + "/v1/me"
        await refused(.invalidDPoPProof, atResource: true) { _ = try await gate.resource(headers: [], method: "GET", path: "/v1/me", accessToken: "at") }
        await refused(.invalidDPoPProof, atResource: true) {
            _ = try await gate.resource(headers: [try proof(method: "GET", url: url)], method: "GET", path: "/v1/me", accessToken: "at")
        }
        await refused(.invalidDPoPProof, atResource: true) {
            _ = try await gate.resource(headers: [try proof(method: "GET", url: url, accessToken: "other")], method: "GET", path: "/v1/me", accessToken: "at")
        }
        #expect(store.count(.usedJTIs) == 0)
        let header = try proof(method: "GET", url: url, accessToken: "at")
        let accepted = try await gate.resource(headers: [header], method: "GET", path: "/v1/me", accessToken: "at")
        #expect(accepted.thumbprint == key.publicKey.thumbprint)
        await refused(.invalidDPoPProof, atResource: true) { _ = try await gate.resource(headers: [header], method: "GET", path: "/v1/me", accessToken: "at") }
    }

    @Test("At a resource with requireNonce, the nonce refusal is use_dpop_nonce at the resource, with the header")
    func resourceNonce() async throws {
        let gate = gate(requireNonce: true)
        let url = Self.issuer + "/v1/me"
        let error = await refused(.useDPoPNonce, atResource: true) {
            _ = try await gate.resource(headers: [try proof(method: "GET", url: url, accessToken: "at")], method: "GET", path: "/v1/me", accessToken: "at")
        }
        #expect(error?.headers[DPoP.nonceHeaderName] != nil)
    }
}
