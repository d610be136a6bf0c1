import ArgumentParser
import Crypto
import Foundation
import LatchClient
import LatchJOSE
import LatchModel

/// The FIDO scenarios of `latch bench`, with the SDK's WebAuthn messages and a P-256 key per connection:
/// `webauthn-register` — options, a `packed` self-attested registration, then its deletion (so a user never reaches
/// the per-user limit; three requests) — and `webauthn-sign-in` — options, then the token endpoint's `webauthn`
/// grant with a discoverable assertion (two requests).
final class BenchFido: @unchecked Sendable {
    static let scenarios: Set<String> = ["webauthn-register", "webauthn-sign-in"]

    let origin: String
    let rpID = "127.0.0.1"
    let accessTokens: [String]
    /// Per connection: the signed-in user's handle and its registered credential.
    var credentials: [(userHandle: String, credentialID: [UInt8], key: P256.Signing.PrivateKey)] = []

    init(port: Int, accessTokens: [String]) {
        origin = "http://127.0.0.1:\(port)"
        self.accessTokens = accessTokens
    }

    /// One registration on `connection` for the user of `bearer`: its answer, and the user handle the options named.
    func register(_ key: P256.Signing.PrivateKey, credentialID: [UInt8], bearer: String, on connection: BenchConnection) throws
        -> (status: Int, body: [UInt8], userHandle: String?)
    {
        let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer \(bearer)")]
        let (status, body) = try connection.send("POST", "/v1/fido/registration/options", headers: headers, body: Array("{}".utf8))
        guard status == 200, case .object(let options)? = try? JSONValue.parse(Data(body)), let ceremony = options["ceremonyId"]?.stringValue,
            let challenge = options["publicKey"]?["challenge"]?.stringValue
        else { return (status, body, nil) }
        let unsigned = WebAuthnMessages.registration(
            credentialID: credentialID, aaguid: LatchAuthenticatorModel.software.aaguid, publicKey: PublicKey(p256: key.publicKey), rpID: rpID, origin: origin,
            challenge: challenge)
        let credential = WebAuthnMessages.registrationJSON(
            unsigned, credentialID: credentialID, signature: try key.signature(for: unsigned.signedBytes).derRepresentation)
        let request: JSONValue = .object(["ceremonyId": .string(ceremony), "credential": credential])
        let (registered, answer) = try connection.send("POST", "/v1/fido/registration", headers: headers, body: request.serialized())
        return (registered, answer, options["publicKey"]?["user"]?["id"]?.stringValue)
    }

    /// One authenticator per connection's user, for the sign-in scenario.
    func prepare(port: Int) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        for bearer in accessTokens {
            let key = P256.Signing.PrivateKey()
            let credentialID = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let (status, body, userHandle) = try register(key, credentialID: credentialID, bearer: bearer, on: connection)
            guard status == 201, let userHandle else {
                throw ValidationError("setup FIDO registration failed: \(status) \(String(decoding: body, as: UTF8.self))")
            }
            credentials.append((userHandle, credentialID, key))
        }
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        if name == "webauthn-register" {
            let tokens = accessTokens
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
                let (status, body, _) = try self.register(
                    P256.Signing.PrivateKey(), credentialID: (0..<32).map { _ in UInt8.random(in: 0...255) }, bearer: tokens[worker], on: connection)
                guard status == 201, let id = BenchFixture.member("id", in: body) else {
                    return (2, false, "\(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
                }
                let (deleted, _) = try connection.send("DELETE", "/v1/me/authenticators/\(id)", headers: [("Authorization", "Bearer \(tokens[worker])")])
                return (3, deleted == 204, deleted == 204 ? nil : "delete \(deleted)")
            }
        }
        let credentials = credentials
        return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
            let credential = credentials[worker]
            let (status, body) = try connection.send(
                "POST", "/v1/fido/authentication/options", headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
            guard status == 200, case .object(let options)? = try? JSONValue.parse(Data(body)), let ceremony = options["ceremonyId"]?.stringValue,
                let challenge = options["publicKey"]?["challenge"]?.stringValue
            else { return (1, false, "options \(status)") }
            let unsigned = WebAuthnMessages.assertion(rpID: self.rpID, origin: self.origin, challenge: challenge)
            let assertion = WebAuthnMessages.assertionJSON(
                unsigned, credentialID: credential.credentialID, userHandle: credential.userHandle,
                signature: try credential.key.signature(for: unsigned.signedBytes).derRepresentation)
            let (tokenStatus, tokenBody) = try connection.send(
                "POST", "/oauth2/token", headers: BenchFixture.formHeaders,
                body: formBody([
                    ("grant_type", GrantType.webauthn), ("ceremony_id", ceremony),
                    ("credential", String(decoding: assertion.serialized(), as: UTF8.self)),
                ]))
            let result = BenchFixture.ok(tokenStatus, tokenBody)
            return (2, result.1, result.2)
        }
    }
}
