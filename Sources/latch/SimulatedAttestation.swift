import Crypto
import Foundation
import LatchAttestation
import LatchClient
import LatchJOSE
import X509

/// Evidence in the real formats, made under a test root (`latch admin attestation test-root create`): what
/// `latch device register --attest` gives the SDK in place of Apple's and Google's services.
enum SimulatedAttestation {
    /// What a simulated device remembers about its attestation, next to its other state.
    struct Saved: Codable {
        var kind: String
        var testRoot: String
        var appId: String?
        var environment: String?
    }

    static func authority(_ folder: String) throws -> TestAttestationAuthority {
        let hint = "Create one with `latch admin attestation test-root create --out \(folder)`."
        return try TestAttestationAuthority(
            rootPEM: try InputFile.text(folder + "/root.pem", option: "--test-root", hint: hint),
            keyPEM: try InputFile.text(folder + "/root.key", option: "--test-root", hint: hint))
    }

    /// App Attest: keys kept in `<state>/app-attest/<hex key id>.pem`, each with its counter.
    struct AppAttestDevice: AppAttestProvider {
        let authority: TestAttestationAuthority
        let appID: String
        let environment: AppAttest.Environment
        let folder: URL

        struct KeyFile: Codable {
            var privateKey: String
            var counter: UInt32
        }

        func file(_ keyId: String) -> URL {
            folder.appendingPathComponent(Hex.encode(Data(base64Encoded: keyId) ?? Data()) + ".json")
        }

        func load(_ keyId: String) throws -> (P256.Signing.PrivateKey, KeyFile) {
            let saved = try JSONDecoder().decode(KeyFile.self, from: Data(contentsOf: file(keyId)))
            return (try P256.Signing.PrivateKey(pemRepresentation: saved.privateKey), saved)
        }

        func generateKey() async throws -> String {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let key = P256.Signing.PrivateKey()
            let keyId = Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString()
            let saved = KeyFile(privateKey: key.pemRepresentation, counter: 0)
            guard FileManager.default.createFile(atPath: file(keyId).path, contents: try JSONEncoder().encode(saved), attributes: [.posixPermissions: 0o600])
            else { throw InputFileError(description: "cannot write \(file(keyId).path)") }
            return keyId
        }

        func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
            let (key, _) = try load(keyId)
            return Data(
                try authority.appAttestAttestation(
                    deviceKey: key.publicKey, appID: appID, environment: environment, clientDataHash: Array(clientDataHash), now: Date()))
        }

        func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
            var (key, saved) = try load(keyId)
            saved.counter += 1
            try JSONEncoder().encode(saved).write(to: file(keyId))
            // The authority signs SHA-256(authenticatorData ‖ SHA-256(clientData)); here the app hands over the hash.
            return Data(try TestAttestationAuthority.appAttestAssertion(deviceKey: key, appID: appID, counter: saved.counter, clientDataHash: Array(clientDataHash)))
        }
    }

    /// Android key attestation: a P-256 key certified as Keystore would certify it.
    struct AndroidKeyDevice: AndroidKeyAttestationProvider {
        let authority: TestAttestationAuthority
        let packageName: String
        let signatureDigest: [UInt8]

        func generateAttestedKey(challenge: Data) async throws -> (chain: [Data], privateKey: PrivateKey) {
            let key = P256.Signing.PrivateKey()
            let chain = try authority.androidKeyChain(
                deviceKey: Certificate.PublicKey(key.publicKey), challenge: Array(challenge), packageName: packageName, signatureDigest: signatureDigest,
                now: Date())
            return (chain.map { Data($0) }, PrivateKey(p256: key))
        }
    }

    /// Play Integrity: tokens under the test keys of `play-integrity.json`.
    struct PlayIntegrityDevice: PlayIntegrityProvider {
        let packageName: String
        let keys: TestPlayIntegrityKeys
        let signatureDigest: [UInt8]

        func integrityToken(requestHash: String) async throws -> String {
            guard let decryption = Data(base64Encoded: keys.decryptionKey) else { throw InputFileError(description: "play-integrity.json: bad decryptionKey") }
            return try TestAttestationAuthority.playIntegrityToken(
                packageName: packageName, requestHash: requestHash, certificateDigest: signatureDigest, timestamp: Date(),
                decryptionKey: SymmetricKey(data: decryption), signingKey: try P256.Signing.PrivateKey(pemRepresentation: keys.signingKey))
        }
    }
}
