import Foundation
import LatchJOSE
import LatchModel

/// What a provider hands the client for a registration or sign-in.
public struct AuthenticationInfo: Sendable, Hashable {
    /// `FSSO` (a custom federated JWT) or `TEST` (a test registration JWT).
    public var type: RegistrationMethod
    /// The signed JWT.
    public var jwt: String
    /// The username it asserts (`sub`).
    public var username: String

    public init(type: RegistrationMethod, jwt: String, username: String) {
        self.type = type
        self.jwt = jwt
        self.username = username
    }
}

/// Produces proof of who the user is: a freshly signed JWT each time it is asked.
public protocol AuthenticationProvider: Sendable {
    /// A new JWT (new `jti`, current `iat`).
    func authenticationInfo() throws -> AuthenticationInfo
}

/// Signs custom federated JWTs from a local RSA or P-256 private key, as the customer's backend would:
/// `iss`, `kid`, `aud`, `sub`, `jti`, `iat`, `exp`, plus custom attributes. For development,
/// tests and command-line tools — in an app, the backend signs and the app receives the JWT.
public struct LocalAuthenticationProvider: AuthenticationProvider {
    public let issuer: String
    public let keyID: String
    public let username: String
    public let audience: String
    public let attributes: [String: JSONValue]
    public let lifetime: Int64
    private let signer: JWSSigner
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - privateKeyPEM: PKCS#8, SEC1 or PKCS#1 PEM of an RSA (≥ 2048) or P-256 key.
    public init(
        issuer: String, keyID: String, privateKeyPEM: String, username: String, audience: String = "identity-service",
        attributes: [String: JSONValue] = [:], lifetime: Int64 = 300, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(UserClientError) {
        guard let key = try? PrivateKey(pem: privateKeyPEM) else {
            throw .invalidInput("the issuer key is not a PEM RSA or P-256 private key")
        }
        guard !issuer.isEmpty, !keyID.isEmpty, !username.isEmpty else { throw .invalidInput("issuer, keyID and username are required") }
        self.issuer = issuer
        self.keyID = keyID
        self.username = username
        self.audience = audience
        self.attributes = attributes
        self.lifetime = lifetime
        self.signer = JWSSigner(key: key, keyID: keyID)
        self.clock = clock
    }

    public func authenticationInfo() throws -> AuthenticationInfo {
        let now = Int64(clock().timeIntervalSince1970)
        var claims = attributes
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(username)
        claims["aud"] = .string(audience)
        claims["jti"] = .string(UUID().uuidString)
        claims["iat"] = .int(now)
        claims["exp"] = .int(now + lifetime)
        return AuthenticationInfo(type: .fsso, jwt: try signer.sign(claims: claims), username: username)
    }
}

/// Signs test registration JWTs with a test registration key an admin downloaded: header
/// `kid` (default `register_key`), claims `iss: testRegisterIssuer`, `aud: testRegisterAudience`,
/// `sub: <name>-<uuid>`, `jti`, `iat`, `exp`. Registering with it gives the device a sign-in key.
public struct TESTAuthenticationProvider: AuthenticationProvider {
    public let name: String
    public let keyID: String
    private let signer: JWSSigner
    private let clock: @Sendable () -> Date
    /// The username this provider registers (fixed per provider instance).
    public let username: String

    public init(name: String, privateKeyPEM: String, keyID: String = "register_key", clock: @escaping @Sendable () -> Date = { Date() })
        throws(UserClientError)
    {
        guard let key = try? PrivateKey(pem: privateKeyPEM) else {
            throw .invalidInput("the test key is not a PEM RSA or P-256 private key")
        }
        self.name = name
        self.keyID = keyID
        self.signer = JWSSigner(key: key, keyID: keyID)
        self.clock = clock
        self.username = "\(name)-\(UUID().uuidString.lowercased())"
    }

    public func authenticationInfo() throws -> AuthenticationInfo {
        let now = Int64(clock().timeIntervalSince1970)
        let jwt = try signer.sign(claims: [
            "iss": "testRegisterIssuer", "aud": "testRegisterAudience", "sub": .string(username),
            "jti": .string(UUID().uuidString), "iat": .int(now), "exp": .int(now + 3600),
        ])
        return AuthenticationInfo(type: .test, jwt: jwt, username: username)
    }
}
