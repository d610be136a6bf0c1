import ArgumentParser
import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import X509

/// The device-attestation scenarios of `latch bench`: registrations with App Attest, Android key attestation and
/// Play Integrity evidence (made by the load generator under a test root, in the real formats, for a fresh
/// challenge each time), and App Attest assertion sign-ins. Each registration is two requests (challenge, then
/// registration); each sign-in two (nonce, then token).
final class BenchAttestation: @unchecked Sendable {
    static let scenarios: Set<String> = ["app-attest-register", "app-attest-sign-in", "android-key-register", "play-integrity-register"]
    static let appID = "BENCH12345.com.example.bench"
    static let packageName = "com.example.bench"
    static let signingCertificate = Array(SHA256.hash(data: Array("bench signing certificate".utf8)))

    let authority: TestAttestationAuthority
    let rootFile: String
    let playDecryption = SymmetricKey(size: .bits256)
    let playSigning = P256.Signing.PrivateKey()
    /// Per connection: an App Attest user's key, key id and username, and the counter of its last assertion.
    var appAttestDevices: [(key: P256.Signing.PrivateKey, keyID: String, username: String)] = []
    let counters = Slots<UInt32>(count: 256, initial: 0)

    init(directory: String) throws {
        authority = try TestAttestationAuthority.create(now: Date())
        rootFile = directory + "/attestation-root.pem"
        try authority.rootPEM.write(toFile: rootFile, atomically: true, encoding: .utf8)
    }

    /// Registers the app's evidence, and one App Attest device per connection for the sign-in scenario.
    func prepare(port: Int, adminToken: String, connections: Int, signIn: Bool) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        func send(_ method: String, _ path: String, _ body: some Encodable, admin: Bool = true) throws -> [UInt8] {
            var headers = [("Content-Type", "application/json")]
            if admin { headers.append(("Authorization", "Bearer \(adminToken)")) }
            let (status, answer) = try connection.send(method, path, headers: headers, body: Array(try JSONEncoder().encode(body)))
            guard (200..<300).contains(status) else { throw ValidationError("setup \(path) failed: \(status) \(String(decoding: answer, as: UTF8.self))") }
            return answer
        }
        _ = try send(
            "PATCH", "/admin/v1/clients/default",
            AdminClientPatch(
                ios: AdminIOSEvidence(appIds: [Self.appID]),
                android: AdminAndroidEvidence(
                    packageNames: [Self.packageName],
                    playIntegrity: AdminPlayIntegrity(
                        decryptionKey: playDecryption.withUnsafeBytes { Data($0) }.base64EncodedString(),
                        verificationKey: playSigning.publicKey.derRepresentation.base64EncodedString()))))
        _ = try send("POST", "/admin/v1/clients/default/signing-certificates", AdminSigningCertificateRequest(sha256: Hex.encode(Self.signingCertificate)))
        guard signIn else { return }
        for _ in 0..<connections {
            let key = P256.Signing.PrivateKey()
            let (status, body) = try register(.appAttest, key: key, on: connection)
            guard status == 201, let answer = try? JSONDecoder().decode(RegistrationResponse.self, from: Data(body)) else {
                throw ValidationError("setup App Attest registration failed: \(status) \(String(decoding: body, as: UTF8.self))")
            }
            appAttestDevices.append((key, Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString(), answer.username))
        }
    }

    /// One registration of `type` for `key`: challenge, evidence, registration. Returns the registration's answer.
    func register(_ type: RegistrationMethod, key: P256.Signing.PrivateKey, on connection: BenchConnection) throws -> (Int, [UInt8]) {
        let (challengeStatus, challengeBody) = try connection.send(
            "POST", "/v1/registrations/challenge", headers: [("Content-Type", "application/json")],
            body: Array(#"{"challengeType":"\#(type.rawValue)"}"#.utf8))
        guard challengeStatus == 200, let challenge = BenchFixture.member("challenge", in: challengeBody) else { return (challengeStatus, challengeBody) }
        var request = RegistrationRequest(challengeType: type, answer: "", challenge: challenge)
        switch type {
        case .appAttest:
            let object = try authority.appAttestAttestation(
                deviceKey: key.publicKey, appID: Self.appID, environment: .production, clientDataHash: Array(SHA256.hash(data: Array(challenge.utf8))),
                now: Date())
            request.answer = Data(object).base64EncodedString()
            request.keyId = Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString()
        case .androidKey:
            let chain = try authority.androidKeyChain(
                deviceKey: Certificate.PublicKey(key.publicKey), challenge: Array(challenge.utf8), packageName: Self.packageName,
                signatureDigest: Self.signingCertificate, now: Date())
            request.answer = String(decoding: JSONValue.array(chain.map { .string(Data($0).base64EncodedString()) }).serialized(), as: UTF8.self)
            request.publicKey = RegistrationPublicKey(keyId: "bench", algorithm: "ES256", publicKey: "")
        default:
            let publicKey = PublicKey(p256: key.publicKey)
            request.answer = try TestAttestationAuthority.playIntegrityToken(
                packageName: Self.packageName,
                requestHash: PlayIntegrity.bindingRequestHash(challenge: challenge, publicKeySPKI: Array(publicKey.derRepresentation)),
                certificateDigest: Self.signingCertificate, timestamp: Date(), decryptionKey: playDecryption, signingKey: playSigning)
            request.publicKey = RegistrationPublicKey(keyId: "bench", algorithm: "ES256", publicKey: publicKey.pemRepresentation)
            request.packageName = Self.packageName
        }
        return try connection.send("POST", "/v1/registrations", headers: [("Content-Type", "application/json")], body: Array(try JSONEncoder().encode(request)))
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        switch name {
        case "app-attest-sign-in":
            let devices = appAttestDevices
            let counters = counters
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
                let device = devices[worker]
                let (status, body) = try connection.send(
                    "POST", "/v1/sign-in/challenge", headers: [("Content-Type", "application/json")], body: Array(#"{"username":"\#(device.username)"}"#.utf8))
                guard status == 200, let nonce = BenchFixture.member("nonce", in: body) else { return (1, false, "challenge \(status)") }
                let counter = counters.value(worker) + 1
                counters.set(worker, counter)
                let clientData = Array(#"{"challenge":"\#(nonce)"}"#.utf8)
                let assertion = try TestAttestationAuthority.appAttestAssertion(deviceKey: device.key, appID: Self.appID, counter: counter, clientData: clientData)
                let (tokenStatus, tokenBody) = try connection.send(
                    "POST", "/oauth2/token", headers: BenchFixture.formHeaders,
                    body: formBody([
                        ("grant_type", GrantType.appAttest), ("key_id", device.keyID), ("assertion", Base64URL.encode(Data(assertion))),
                        ("client_data", Base64URL.encode(Data(clientData))),
                    ]))
                let result = BenchFixture.ok(tokenStatus, tokenBody)
                return (2, result.1, result.2)
            }
        default:
            let type: RegistrationMethod = name == "app-attest-register" ? .appAttest : name == "android-key-register" ? .androidKey : .playIntegrity
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, _, _ in
                let (status, body) = try self.register(type, key: P256.Signing.PrivateKey(), on: connection)
                return (2, status == 201, status == 201 ? nil : "\(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
        }
    }
}
