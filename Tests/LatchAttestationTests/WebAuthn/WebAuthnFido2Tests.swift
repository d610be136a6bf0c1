import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Testing

/// Credentials made with Yubico's python-fido2 acting as authenticator and client, each accepted or refused by
/// fido2's own relying party (`scripts/webauthn_fido2_vectors.py`, Tests/Vectors/webauthn/fido2/README.md): Latch
/// must agree with it on every case, with user verification required as fido2's server was.
@Suite("WebAuthn: credentials from python-fido2")
struct WebAuthnFido2Tests {
    static let files: [String] = {
        let folder = Vectors.folder.appendingPathComponent("webauthn/fido2")
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }()

    static func load(_ file: String) -> JSONValue {
        (try? JSONValue.parse(Data(contentsOf: Vectors.folder.appendingPathComponent("webauthn/fido2/\(file)")))) ?? .null
    }

    static func bytes(_ value: JSONValue?) -> [UInt8] { value?.stringValue.flatMap(Base64URL.decode).map(Array.init) ?? [] }

    @Test("Latch's verdict is fido2's, for every positive and negative case", arguments: files)
    func sameVerdict(_ file: String) throws {
        let vector = Self.load(file)
        var party = WebAuthnRelyingParty(rpID: "latch.test", origins: ["https://latch.test"])
        // fido2's server required user verification except for the U2F case.
        party.requireUserVerification = !file.contains("u2f")
        if let pem = vector["trustAnchorPEM"]?.stringValue {
            party.attestationAnchors = try TrustAnchors(pem: pem)
            party.requireTrustedAttestation = true
        }
        let accepted = vector["fido2ServerAccepted"]
        var trace = AttestationTrace()
        let registration = vector["registration"]?["response"]
        let registered: WebAuthnRelyingParty.VerifiedCredential
        do {
            registered = try party.verifyRegistration(
                clientDataJSON: Self.bytes(registration?["clientDataJSON"]), attestationObject: Self.bytes(registration?["attestationObject"]),
                challenge: Self.bytes(vector["registrationChallenge"]), at: Date(timeIntervalSince1970: 1_795_000_000), trace: &trace)
        } catch {
            #expect(accepted?["registration"] == .bool(false), "\(file): Latch refused a registration fido2 accepted: \(error)")
            return
        }
        #expect(accepted?["registration"] == .bool(true), "\(file): Latch accepted a registration fido2 refused")
        #expect(Hex.encode(registered.credentialID) == vector["expected"]?["credentialId"]?.stringValue)
        #expect(Hex.encode(registered.aaguid) == vector["expected"]?["aaguid"]?.stringValue)
        guard let authentication = vector["authentication"]?["response"], authentication != .null else { return }
        var assertionTrace = AttestationTrace()
        do {
            let asserted = try party.verifyAuthentication(
                clientDataJSON: Self.bytes(authentication["clientDataJSON"]), authenticatorData: Self.bytes(authentication["authenticatorData"]),
                signature: Self.bytes(authentication["signature"]), challenge: Self.bytes(vector["authenticationChallenge"]),
                publicKey: registered.publicKey, storedSignCount: registered.signCount, trace: &assertionTrace)
            #expect(accepted?["authentication"] == .bool(true), "\(file): Latch accepted an assertion fido2 refused")
            #expect(Int64(asserted.signCount) == vector["expected"]?["signCount"]?.doubleValue.map { Int64($0) })
        } catch {
            #expect(accepted?["authentication"] == .bool(false), "\(file): Latch refused an assertion fido2 accepted: \(error)")
        }
    }

    @Test("The vectors are there (the generator ran)")
    func present() { #expect(Self.files.count >= 20) }
}
