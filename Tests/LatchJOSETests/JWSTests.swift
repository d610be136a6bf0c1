import Foundation
@testable import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Compact JWS")
struct JWSTests {
    let claims: [String: JSONValue] = ["sub": "alice", "n": 1]

    @Test("A signed token verifies with its key", arguments: [TestKeys.p256, TestKeys.rsa])
    func roundTrip(key: PrivateKey) throws {
        let token = try JWSSigner(key: key, keyID: "k").sign(claims: claims)
        let parsed = try ParsedJWS(token)
        #expect(parsed.keyID == "k")
        let verified = try parsed.verify(with: key.publicKey)
        #expect(verified.claims["sub"] == "alice")
        #expect(verified.algorithm == key.algorithm)
    }

    @Test("Another key's signature is refused", arguments: [(TestKeys.p256, TestKeys.p256b), (TestKeys.rsa, TestKeys.rsa2)])
    func wrongKey(keys: (PrivateKey, PrivateKey)) throws {
        let token = try JWSSigner(key: keys.0, keyID: "k").sign(claims: claims)
        #expect(throws: JOSEError(.badSignature, "")) { try ParsedJWS(token).verify(with: keys.1.publicKey) }
    }

    @Test("A changed payload no longer verifies")
    func tamperedPayload() throws {
        let token = try JWSSigner(key: TestKeys.p256, keyID: "k").sign(claims: claims)
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"sub":"mallory","n":1}"#.utf8)) + "." + parts[2]
        #expect(throws: JOSEError(.badSignature, "")) { try ParsedJWS(forged).verify(with: TestKeys.p256.publicKey) }
    }

    @Test("alg none, HMAC and unknown algorithms are refused before any key is used", arguments: ["none", "HS256", "ES512", "PS256", "NONE"])
    func forbiddenAlgorithms(alg: String) throws {
        let token = JWTBuilder(header: ["alg": .string(alg), "kid": "k"], claims: claims).unsigned(signature: [1, 2, 3])
        #expect(throws: JOSEError(.unsupportedAlgorithm, "")) { try ParsedJWS(token).verify(with: TestKeys.rsa.publicKey) }
    }

    @Test("An ES256 token is refused by an RSA key and vice versa (algorithm binding)")
    func algorithmBinding() throws {
        let token = try JWTBuilder(header: ["kid": "k"], claims: claims).sign(with: TestKeys.p256)
        #expect(throws: JOSEError(.algorithmMismatch, "")) { try ParsedJWS(token).verify(with: TestKeys.rsa.publicKey) }
    }

    @Test("Headers that bring their own key or critical extensions are refused", arguments: ["jwk", "jku", "x5u", "x5c", "crit"])
    func forbiddenHeaders(name: String) throws {
        let token = try JWTBuilder(header: ["kid": "k", name: .array(["x"])], claims: claims).sign(with: TestKeys.p256)
        #expect(throws: JOSEError(.forbiddenHeader, "")) { try ParsedJWS(token).verify(with: TestKeys.p256.publicKey) }
    }

    @Test(
        "Malformed compact serializations are refused",
        arguments: ["", "a.b", "a.b.c.d", "..", "eyJhbGciOiJFUzI1NiJ9..sig", "!!!.e30.c2ln", "W10.e30.c2ln", "e30.e30.c2ln", "eyJhbGciOiJFUzI1NiJ9.W10.c2ln"])
    func malformed(token: String) {
        #expect(throws: JOSEError.self) { try ParsedJWS(token) }
    }

    @Test("Tokens over the size limit are refused unread")
    func tooLarge() throws {
        let token = try JWTBuilder(header: ["kid": "k"], claims: ["pad": .string(String(repeating: "x", count: 9000))]).sign(with: TestKeys.p256)
        #expect(throws: JOSEError(.tooLarge, "")) { try ParsedJWS(token) }
    }

    @Test("ES256 signatures must be 64 raw bytes (a DER signature is refused)")
    func derSignatureRefused() throws {
        let token = try JWTBuilder(header: ["kid": "k"], claims: claims).sign(with: TestKeys.p256)
        let parts = token.split(separator: ".")
        let raw = Base64URL.decode(parts[2])!
        let der = Data([0x30, 0x44, 0x02, 0x20]) + raw.prefix(32) + Data([0x02, 0x20]) + raw.suffix(32)
        let forged = parts[0] + "." + parts[1] + "." + Base64URL.encode(der)
        #expect(throws: JOSEError(.badSignature, "")) { try ParsedJWS(forged).verify(with: TestKeys.p256.publicKey) }
    }
}

@Suite("Keys")
struct KeyTests {
    @Test("RSA public keys read from SPKI PEM, PKCS#1 PEM and base64 DER")
    func rsaFormats() throws {
        let key = TestKeys.rsa.publicKey
        let spki = key.pemRepresentation
        #expect(spki.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(try PublicKey(pemOrBase64DER: spki, algorithm: .RS256).derRepresentation == key.derRepresentation)
        #expect(try PublicKey(pemOrBase64DER: key.derRepresentation.base64EncodedString(), algorithm: .RS256).derRepresentation == key.derRepresentation)
        // PKCS#1: the RSAPublicKey inside the SPKI BIT STRING (after a 24-byte header for 2048-bit keys).
        let pkcs1 = key.derRepresentation.dropFirst(24)
        let pem = "-----BEGIN RSA PUBLIC KEY-----\n" + Data(pkcs1).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed]) + "\n-----END RSA PUBLIC KEY-----\n"
        #expect(try PublicKey(pemOrBase64DER: pem, algorithm: .RS256).derRepresentation == key.derRepresentation)
        #expect(try PublicKey(pemOrBase64DER: pem).algorithm == .RS256)
    }

    @Test("P-256 keys read from PEM and infer ES256")
    func p256() throws {
        let key = try PublicKey(pemOrBase64DER: TestKeys.p256.publicKey.pemRepresentation)
        #expect(key.algorithm == .ES256)
    }

    @Test(
        "Bad key text is refused with invalidKey",
        arguments: [
            "", "not a key", "-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END RSA PUBLIC KEY-----",
        ])
    func badKeys(text: String) {
        #expect(throws: JOSEError(.invalidKey, "")) { try PublicKey(pemOrBase64DER: text, algorithm: .RS256) }
    }

    @Test("An EC key is refused where RS256 is named, and RSA keys under 2048 bits are refused")
    func wrongTypeOrSize() throws {
        #expect(throws: JOSEError(.invalidKey, "")) {
            try PublicKey(pemOrBase64DER: TestKeys.p256.publicKey.pemRepresentation, algorithm: .RS256)
        }
        // A 1024-bit RSA SubjectPublicKeyInfo (modulus of 0x80 bytes), built by hand.
        var spki1024 = Data([0x30, 0x81, 0x9f, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00])
        spki1024 += Data([0x03, 0x81, 0x8d, 0x00, 0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00])
        spki1024 += Data([0xC1] + [UInt8](repeating: 0x5B, count: 126) + [0x01])
        spki1024 += Data([0x02, 0x03, 0x01, 0x00, 0x01])
        #expect(throws: JOSEError(.invalidKey, "")) { try PublicKey(der: spki1024, algorithm: .RS256) }
    }

    @Test("JWK export and import round-trip, with kid and alg")
    func jwkRoundTrip() throws {
        for key in [TestKeys.p256.publicKey, TestKeys.rsa.publicKey] {
            let jwk = key.jwk(kid: "k1")
            #expect(jwk.kid == "k1")
            #expect(jwk.alg == key.algorithm.rawValue)
            #expect(try PublicKey(jwk: jwk).derRepresentation == key.derRepresentation)
        }
    }

    @Test("RFC 7638 §3.1 thumbprint example")
    func thumbprint() throws {
        let jwk = JSONWebKey(
            kty: "RSA", kid: nil, alg: nil,
            n: "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            e: "AQAB")
        #expect(try PublicKey(jwk: jwk).thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test("Private keys round-trip through PEM and never print their material")
    func privateKeyPEM() throws {
        for key in [TestKeys.p256, TestKeys.rsa] {
            let reread = try PrivateKey(pem: key.pemRepresentation)
            #expect(reread.publicKey.derRepresentation == key.publicKey.derRepresentation)
            #expect(!"\(key)".contains("BEGIN"))
        }
    }
}

@Suite("Base64url and JSON")
struct EncodingTests {
    @Test("Base64url round-trips every length", arguments: 0..<40)
    func base64url(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let encoded = Base64URL.encode(bytes)
        #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
        #expect(Base64URL.decode(encoded) == Data(bytes))
        #expect(encoded == Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
    }

    @Test("Base64url refuses padding, standard alphabet, impossible lengths and non-canonical trailing bits", arguments: ["YQ==", "a+b/", "abcde", "a b", "YR", "YWJ"])
    func base64urlRefuses(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("Canonical short encodings decode")
    func canonical() {
        #expect(Base64URL.decode("YQ") == Data("a".utf8))
        #expect(Base64URL.decode("YWI") == Data("ab".utf8))
    }

    @Test("The JSON writer escapes per RFC 8259 and parses back")
    func jsonEscaping() throws {
        let value: JSONValue = ["q": "a\"b\\c\n\t\u{01}é😀", "n": .array([1, .double(2.5), nil, true]), "o": ["x": "y"]]
        let text = value.serialized()
        #expect(try JSONValue.parse(text) == value)
        #expect(String(decoding: text, as: UTF8.self).contains("\\u0001"))
    }

    /// The JWS with its ECDSA `s` replaced by `n − s`: the other valid spelling of the same signature.
    static func malleated(_ token: String) -> String {
        let parts = token.split(separator: ".").map(String.init)
        let signature = Array(Base64URL.decode(parts[2])!)
        let flipped = Array(signature[..<32]) + P256LowS.negate(Array(signature[32...]))
        return parts[0] + "." + parts[1] + "." + Base64URL.encode(flipped)
    }

    @Test("ES256 signatures are written in low-S form; the high-S twin verifies in general but not as canonical")
    func lowS() throws {
        #expect(P256LowS.negate(P256LowS.negate(Array(repeating: 7, count: 32))) == Array(repeating: 7, count: 32))
        for index in 0..<64 {
            let token = try JWSSigner(key: TestKeys.p256, keyID: "k").sign(claims: ["n": .int(Int64(index))])
            let signature = Array(Base64URL.decode(token.split(separator: ".")[2])!)
            #expect(P256LowS.isLow(signature[32...]), "signature \(index) is high-S")
            let parsed = try ParsedJWS(token)
            _ = try parsed.verify(with: TestKeys.p256.publicKey, canonical: true)
            let twin = try ParsedJWS(Self.malleated(token))
            // The twin is a valid ECDSA signature (swift-crypto accepts it) …
            _ = try twin.verify(with: TestKeys.p256.publicKey)
            // … but not Latch's spelling.
            #expect(throws: JOSEError.self) { _ = try twin.verify(with: TestKeys.p256.publicKey, canonical: true) }
        }
    }

    @Test("ES384: a P-384 token verifies; its key reads from PEM and JWK; another curve's key, a tampered token and canonical-only checks refuse it")
    func es384() throws {
        let key = try PrivateKey.generate(.ES384)
        #expect(key.algorithm == .ES384)
        let token = try JWSSigner(key: key, keyID: "k").sign(claims: ["sub": "alice"])
        #expect(try ParsedJWS(token).verify(with: key.publicKey).algorithm == .ES384)
        let fromPEM = try PublicKey(pemOrBase64DER: key.publicKey.pemRepresentation)
        #expect(fromPEM.algorithm == .ES384)
        let fromJWK = try PublicKey(jwk: key.publicKey.jwk(kid: "k"))
        #expect(try ParsedJWS(token).verify(with: fromJWK).claims["sub"] == "alice")
        #expect(key.publicKey.jwk(kid: "k").crv == "P-384")
        #expect(throws: JOSEError.self) { try ParsedJWS(token).verify(with: TestKeys.p256.publicKey) }
        #expect(throws: JOSEError.self) { try ParsedJWS(token).verify(with: try PrivateKey.generate(.ES384).publicKey) }
        #expect(throws: JOSEError.self) { try ParsedJWS(token).verify(with: key.publicKey, canonical: true) }
        #expect(throws: JOSEError.self) { try PublicKey(pemOrBase64DER: key.publicKey.pemRepresentation, algorithm: .ES256) }
        // Latch never signs with it.
        #expect(!JWSAlgorithm.signing.contains(.ES384))
        let pem = try PrivateKey(pem: key.pemRepresentation)
        #expect(pem.algorithm == .ES384)
    }
}
