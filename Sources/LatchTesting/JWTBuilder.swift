import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Builds JWTs for tests — well-formed ones and deliberately hostile ones (any header, any signature).
public struct JWTBuilder: Sendable {
    public var header: [String: JSONValue]
    public var claims: [String: JSONValue]

    public init(header: [String: JSONValue] = [:], claims: [String: JSONValue] = [:]) {
        self.header = header
        self.claims = claims
    }

    /// Signs with `key`; `alg` defaults to the key's algorithm, `typ` to `JWT`.
    public func sign(with key: PrivateKey) throws -> String {
        var header = self.header
        if header["alg"] == nil { header["alg"] = .string(key.algorithm.rawValue) }
        if header["typ"] == nil { header["typ"] = "JWT" }
        let input = Self.encode(header) + "." + Self.encode(claims)
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }

    /// Joins header and claims with an arbitrary signature (e.g. empty for `alg: none`).
    public func unsigned(signature: [UInt8] = []) -> String {
        Self.encode(header) + "." + Self.encode(claims) + "." + Base64URL.encode(signature)
    }

    static func encode(_ object: [String: JSONValue]) -> String {
        Base64URL.encode(JSONValue.object(object).serialized())
    }
}

/// Ready-made assertions with the claims Latch's flows expect.
public enum Assertions {
    /// A custom federated assertion: signed by a customer's backend, `sub` = the username.
    public static func federated(
        issuer: String, keyID: String, subject: String, audience: String = "identity-service", now: Int64,
        lifetime: Int64 = 300, jti: String = UUID().uuidString, extra: [String: JSONValue] = [:]
    ) -> JWTBuilder {
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "sub": .string(subject), "aud": .string(audience), "jti": .string(jti),
            "iat": .int(now), "exp": .int(now + lifetime),
        ]
        claims.merge(extra) { _, new in new }
        return JWTBuilder(header: ["kid": .string(keyID)], claims: claims)
    }

    /// An issuer token of a login issuer: `sub` = the consumer ids separated by spaces.
    public static func issuerToken(
        issuer: String, keyID: String, consumers: [String], audience: String, now: Int64, lifetime: Int64 = 120,
        jti: String = UUID().uuidString, extra: [String: JSONValue] = [:]
    ) -> JWTBuilder {
        federated(
            issuer: issuer, keyID: keyID, subject: consumers.joined(separator: " "), audience: audience, now: now, lifetime: lifetime, jti: jti,
            extra: extra)
    }

    /// A device sign-in assertion over a server nonce: `iss` = `sub` = the username, `jti` = the nonce.
    public static func device(username: String, keyID: String, nonce: String, audience: String = "identity-service", now: Int64)
        -> JWTBuilder
    {
        JWTBuilder(
            header: ["kid": .string(keyID)],
            claims: [
                "iss": .string(username), "sub": .string(username), "aud": .string(audience), "jti": .string(nonce),
                "iat": .int(now), "exp": .int(now + 300),
            ])
    }

    /// A test registration token, as the Sudo SDKs' test provider signs it.
    public static func testRegistration(keyID: String, subject: String, now: Int64, jti: String = UUID().uuidString) -> JWTBuilder {
        JWTBuilder(
            header: ["kid": .string(keyID)],
            claims: [
                "iss": "testRegisterIssuer", "aud": "testRegisterAudience", "sub": .string(subject), "jti": .string(jti),
                "iat": .int(now), "exp": .int(now + 3600),
            ])
    }
}

/// Keys generated once per process: RSA generation is slow.
public enum TestKeys {
    /// An RSA-2048 key.
    public static let rsa: PrivateKey = try! PrivateKey.generate(.RS256)
    /// A second RSA-2048 key.
    public static let rsa2: PrivateKey = try! PrivateKey.generate(.RS256)
    /// A P-256 key.
    public static let p256: PrivateKey = try! PrivateKey.generate(.ES256)
    /// A second P-256 key.
    public static let p256b: PrivateKey = try! PrivateKey.generate(.ES256)
}

/// HMAC-SHA256, for building forged HS256 tokens in tests.
public func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
    Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
}
