import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

/// The pieces browser sign-in rests on: sealed values (the upstream's state, codes), PKCE, redirect-URI matching.
struct FederationPrimitivesTests {
    struct Value: Codable, Equatable {
        var id: String
        var expiresAt: Int64
    }

    let sealer = FederationSealer(keyEncryptionKey: [UInt8](repeating: 7, count: 32))

    @Test("Sealed values open only as what they were sealed as, under the same key; any changed byte, truncation or garbage opens to nil (bounded fuzz)")
    func sealedValues() throws {
        let value = Value(id: "abc", expiresAt: 1_790_000_060)
        let sealed = try sealer.seal(value, as: .authorizationCode)
        #expect(sealer.open(sealed, as: .authorizationCode, Value.self) == value)
        #expect(sealer.open(sealed, as: .upstreamState, Value.self) == nil)
        #expect(FederationSealer(keyEncryptionKey: [UInt8](repeating: 8, count: 32)).open(sealed, as: .authorizationCode, Value.self) == nil)
        #expect(sealer.open(sealed, as: .authorizationCode, Value.self, maximumLength: sealed.utf8.count - 1) == nil)
        // Two seals of one value differ (a fresh nonce each time).
        #expect(try sealer.seal(value, as: .authorizationCode) != sealed)
        let bytes = try #require(Base64URL.decode(sealed))
        for index in bytes.indices {
            var changed = bytes
            changed[index] ^= 0x01
            #expect(sealer.open(Base64URL.encode(changed), as: .authorizationCode, Value.self) == nil, "byte \(index)")
        }
        for length in [0, 1, 12, 27, 28, bytes.count - 1] {
            #expect(sealer.open(Base64URL.encode(bytes.prefix(length)), as: .authorizationCode, Value.self) == nil)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let length = Int.random(in: 0...200, using: &generator)
            let garbage = String((0..<length).map { _ in "ABCxyz019-_.~%=+/ \u{00e9}".randomElement(using: &generator)! })
            #expect(sealer.open(garbage, as: .authorizationCode, Value.self) == nil)
        }
    }

    @Test("PKCE: RFC 7636 Appendix B's example; verifier and challenge shapes")
    func pkce() {
        #expect(PKCE.challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.isVerifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"))
        #expect(!PKCE.isVerifier(String(repeating: "a", count: 42)))
        #expect(!PKCE.isVerifier(String(repeating: "a", count: 129)))
        #expect(!PKCE.isVerifier(String(repeating: "a", count: 42) + "!"))
        #expect(PKCE.isChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.isChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"))
        #expect(!PKCE.isChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c="))
        #expect(Secrets.constantTimeEquals("abc", "abc") && !Secrets.constantTimeEquals("abc", "abd") && !Secrets.constantTimeEquals("abc", "ab"))
    }

    @Test("Redirect URIs: exact match, loopback http with any port (RFC 8252 §7.3); what an admin may register")
    func redirectURIs() {
        let registered = ["com.example.app:/cb", "https://app.example.com/cb", "http://127.0.0.1/callback", "http://[::1]/cb"]
        for uri in ["com.example.app:/cb", "https://app.example.com/cb", "http://127.0.0.1/callback", "http://127.0.0.1:53123/callback", "http://[::1]:8080/cb"] {
            #expect(AuthorizationService.matches(uri, registered: registered), "\(uri)")
        }
        for uri in [
            "com.example.app:/cb/", "https://app.example.com/cb?x", "https://app.example.com:443/cb", "http://127.0.0.1:53123/callback/x",
            "http://127.0.0.1:123456/callback", "http://127.0.0.1:/callback", "http://localhost:8080/callback", "http://127.0.0.1.evil/callback",
            "http://127.0.0.1@evil/callback",
        ] {
            #expect(!AuthorizationService.matches(uri, registered: registered), "\(uri)")
        }
        for uri in ["com.example.app:/cb", "https://app.example.com/cb", "http://127.0.0.1/callback", "http://[::1]:9/cb"] {
            #expect(AuthorizationService.isRegistrableRedirectURI(uri), "\(uri)")
        }
        for uri in [
            "http://app.example.com/cb", "https://app.example.com/cb#f", "https://u:p@app.example.com/cb", "javascript:alert(1)", "myapp:/cb",
            "data:text/html,x", "/relative", "https:///nohost", String(repeating: "a", count: 2049),
        ] {
            #expect(!AuthorizationService.isRegistrableRedirectURI(uri), "\(uri)")
        }
    }
}
