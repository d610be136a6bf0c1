import Crypto
import Foundation
import HTTPTypes
import LatchAttestation
import LatchCBOR
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// A software FIDO authenticator for the tests: a P-256 credential, `none` attestation, a counter.
final class SoftwareAuthenticator: @unchecked Sendable {
    let key = P256.Signing.PrivateKey()
    let credentialID = Array(SHA256.hash(data: Array(UUID().uuidString.utf8)))
    let rpID: String
    let origin: String
    var counter: UInt32 = 0

    init(rpID: String, origin: String) {
        self.rpID = rpID
        self.origin = origin
    }

    func clientData(_ type: String, challenge: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// A RegistrationResponseJSON for `challenge` (base64url).
    func register(challenge: String) -> JSONValue {
        var authData = Array(SHA256.hash(data: Array(rpID.utf8)))
        authData.append(0x45)  // UP | UV | AT
        authData += [0, 0, 0, 0] + [UInt8](repeating: 0xAA, count: 16) + [0, UInt8(credentialID.count)] + credentialID
        let raw = Array(key.publicKey.rawRepresentation)
        authData += CBORValue.map([
            .init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .int(-7)), .init(.int(-1), .unsigned(1)),
            .init(.int(-2), .bytes(Array(raw[..<32]))), .init(.int(-3), .bytes(Array(raw[32...]))),
        ]).encoded
        let object = CBORValue.map([.init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])), .init(.text("authData"), .bytes(authData))])
        let id = Base64URL.encode(Data(credentialID))
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "response": .object([
                "clientDataJSON": .string(Base64URL.encode(Data(clientData("webauthn.create", challenge: challenge)))),
                "attestationObject": .string(Base64URL.encode(Data(object.encoded))),
            ]),
        ])
    }

    /// An AuthenticationResponseJSON for `challenge`, with the counter moved to `counter` (default: one more).
    func assert(challenge: String, userHandle: String?, counter next: UInt32? = nil) throws -> String {
        counter = next ?? counter + 1
        var authData = Array(SHA256.hash(data: Array(rpID.utf8)))
        authData.append(0x05)  // UP | UV
        authData += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        let data = clientData("webauthn.get", challenge: challenge)
        let signature = try key.signature(for: authData + Array(SHA256.hash(data: data)))
        let id = Base64URL.encode(Data(credentialID))
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(Data(data))), "authenticatorData": .string(Base64URL.encode(Data(authData))),
            "signature": .string(Base64URL.encode(signature.derRepresentation)),
        ]
        if let userHandle { response["userHandle"] = .string(userHandle) }
        let credential: JSONValue = .object(["id": .string(id), "rawId": .string(id), "type": "public-key", "response": .object(response)])
        return String(decoding: credential.serialized(), as: UTF8.self)
    }
}

@Suite("FIDO authenticators over HTTP")
struct FidoFlowTests {
    @Test("A signed-in user registers a passkey, signs in with it by username and as a discoverable credential; counters only grow")
    func passkey() async throws {
        try await Deployment.make().run { client in
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "fido-user", deviceKey: deviceKey)
            let signedIn = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self)
            let bearer = signedIn.accessToken
            let authenticator = SoftwareAuthenticator(rpID: "latch.test", origin: "https://latch.test")

            // Registration.
            let options = try await client.postJSON("/v1/fido/registration/options", [String: String](), bearer: bearer)
            #expect(options.status == .ok, "\(String(decoding: options.body, as: UTF8.self))")
            #expect(options.json["publicKey"]?["rp"]?["id"] == .string("latch.test"))
            let ceremony = try #require(options.json["ceremonyId"]?.stringValue)
            let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
            let body: JSONValue = .object(["ceremonyId": .string(ceremony), "credential": authenticator.register(challenge: challenge), "name": "phone"])
            func post(_ path: String, _ json: JSONValue, bearer: String? = bearer) async throws -> Reply {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let bearer { headers[.authorization] = "Bearer \(bearer)" }
                return try await client.send(.post, path, headers: headers, body: String(decoding: json.serialized(), as: UTF8.self))
            }
            let registered = try await post("/v1/fido/registration", body)
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["name"] == .string("phone") && registered.json["format"] == .string("none"))
            #expect(try await post("/v1/fido/registration", body).code == "invalid_input", "a ceremony completes once")
            #expect(try await post("/v1/fido/registration", body, bearer: nil).status == .unauthorized)
            let list = try await client.get("/v1/me/authenticators", bearer: bearer).decode(FidoAuthenticatorList.self)
            #expect(list.authenticators.count == 1)

            // Sign-in by username.
            func signIn(username: String?, userHandle: String?, counter: UInt32? = nil) async throws -> Reply {
                let options = try await post(
                    "/v1/fido/authentication/options", username.map { .object(["username": .string($0)]) } ?? .object([:]), bearer: nil)
                let ceremony = try #require(options.json["ceremonyId"]?.stringValue)
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                let credential = try authenticator.assert(challenge: challenge, userHandle: userHandle, counter: counter)
                return try await client.postForm(
                    "/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", ceremony), ("credential", credential)])
            }
            let first = try await signIn(username: user.username, userHandle: nil)
            #expect(first.status == .ok, "\(String(decoding: first.body, as: UTF8.self))")
            let claims = try verifyAgainstJWKS(
                try first.decode(TokenResponse.self).idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
            #expect(claims["sub"]?.stringValue == user.userId && claims["amr"] == ["hwk", "user", "mfa"])
            // A discoverable credential: the user handle names the user.
            let userHandle = Base64URL.encode(Data(user.userId.utf8))
            #expect(try await signIn(username: nil, userHandle: userHandle).status == .ok)
            #expect(try await signIn(username: nil, userHandle: nil).code == "invalid_grant")
            // A counter that does not grow: refused and recorded.
            let cloned = try await signIn(username: user.username, userHandle: nil, counter: 1)
            #expect(cloned.code == "invalid_grant" && cloned.json["error_description"]?.stringValue?.contains("counter") == true)
            // Deleting it (a recent sign-in).
            let id = list.authenticators[0].id
            let deleted = try await client.send(.delete, "/v1/me/authenticators/\(id)", headers: [.authorization: "Bearer \(bearer)"])
            #expect(deleted.status == .noContent)
            #expect(try await signIn(username: user.username, userHandle: nil).code == "invalid_grant")
        }
    }
}
