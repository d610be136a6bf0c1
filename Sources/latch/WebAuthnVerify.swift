import ArgumentParser
import Crypto
import CryptoExtras
import Foundation
import LatchAttestation
import LatchCBOR
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// `latch webauthn verify registration|authentication`: Latch's WebAuthn relying-party verifier, offline, for
/// operators and for responses captured elsewhere. Exit 0 verified, 1 refused, 2 bad usage.
struct WebAuthnCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webauthn", abstract: "WebAuthn (FIDO2) tools.", subcommands: [Verify.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a WebAuthn registration or authentication response offline, step by step.",
            subcommands: [Registration.self, Authentication.self])
    }

    /// What both ceremonies take.
    struct Common: ParsableArguments {
        @Option(help: "The relying party id.") var rpId: String
        @Option(help: "An accepted origin (repeatable): https://… or android:apk-key-hash:….") var origin: [String]
        @Option(help: "The ceremony's challenge, base64url.") var challenge: String
        @Option(help: "Verification time, ISO 8601 (default now).") var at: String?
        @Flag(help: "Require the UV flag.") var requireUserVerification = false
        @Option(help: "PEM file of an attestation trust anchor (repeatable).") var trustAnchor: [String] = []
        @Flag(help: "Print {verified, error, steps, format, aaguid, credentialId, credentialPublicKey, signCount} as JSON.") var json = false

        func relyingParty() throws -> WebAuthnRelyingParty {
            guard !origin.isEmpty else { throw ValidationError("give at least one --origin") }
            var party = WebAuthnRelyingParty(rpID: rpId, origins: Set(origin))
            party.requireUserVerification = requireUserVerification
            party.attestationAnchors = try AttestationCommand.anchors(trustAnchor, builtIn: nil)
            return party
        }

        func challengeBytes() throws -> [UInt8] {
            guard let bytes = Base64URL.decode(challenge) else { throw ValidationError("--challenge must be base64url") }
            return Array(bytes)
        }
    }

    /// The `response` member of a RegistrationResponseJSON / AuthenticationResponseJSON file, and the credential id.
    static func response(_ path: String) throws -> (id: String?, fields: [String: JSONValue]) {
        let text = try InputFile.text(path, option: "file", hint: "It holds the response JSON the browser or app produced.")
        guard case .object(let root)? = try? JSONValue.parse(Data(text.utf8)), case .object(let response)? = root["response"] else {
            throw InputFileError(description: "file \(path) is not a WebAuthn response JSON (an object with a response member)")
        }
        return (root["id"]?.stringValue, response)
    }

    static func field(_ fields: [String: JSONValue], _ name: String) throws -> [UInt8] {
        guard let text = fields[name]?.stringValue, let bytes = Base64URL.decode(text) else {
            throw InputFileError(description: "the response's \(name) is missing or not base64url")
        }
        return Array(bytes)
    }

    static func report(
        _ trace: AttestationTrace, failure: AttestationFailure?, json: Bool, format: String? = nil, aaguid: [UInt8]? = nil,
        credentialID: [UInt8]? = nil, publicKeyCOSE: [UInt8]? = nil, signCount: UInt32? = nil
    ) -> Never {
        if json {
            let steps: [JSONValue] = trace.steps.map { .object(["step": .string($0.name), "ok": .bool($0.ok), "detail": .string($0.detail)]) }
            let answer: JSONValue = .object([
                "verified": .bool(failure == nil), "error": failure.map { .string($0.code.rawValue) } ?? .null, "steps": .array(steps),
                "format": format.map(JSONValue.string) ?? .null, "aaguid": aaguid.map { .string(Hex.encode($0)) } ?? .null,
                "credentialId": credentialID.map { .string(Base64URL.encode(Data($0))) } ?? .null,
                "credentialPublicKey": publicKeyCOSE.map { .string(Base64URL.encode(Data($0))) } ?? .null,
                "signCount": signCount.map { .int(Int64($0)) } ?? .null,
            ])
            print(String(decoding: answer.serialized(), as: UTF8.self))
        } else {
            for step in trace.steps { print("\(step.ok ? "ok  " : "FAIL") \(step.name): \(step.detail)") }
            print(failure.map { "refused: \($0.code.rawValue)" } ?? "verified")
        }
        Foundation.exit(failure == nil ? 0 : 1)
    }

    struct Registration: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A RegistrationResponseJSON (navigator.credentials.create).")
        @OptionGroup var common: Common
        @Flag(help: "Refuse an attestation that does not chain to a --trust-anchor or a platform format's root (none and self attestation included).")
        var requireAttestation = false
        @Argument(help: "File holding the RegistrationResponseJSON.") var file: String

        func run() async throws {
            var party = try common.relyingParty()
            party.requireTrustedAttestation = requireAttestation
            let (_, fields) = try WebAuthnCommand.response(file)
            var trace = AttestationTrace()
            do {
                let credential = try party.verifyRegistration(
                    clientDataJSON: try WebAuthnCommand.field(fields, "clientDataJSON"),
                    attestationObject: try WebAuthnCommand.field(fields, "attestationObject"), challenge: try common.challengeBytes(),
                    at: try AttestationCommand.date(common.at), trace: &trace)
                WebAuthnCommand.report(
                    trace, failure: nil, json: common.json, format: credential.format, aaguid: credential.aaguid, credentialID: credential.credentialID,
                    publicKeyCOSE: credential.publicKeyCOSE, signCount: credential.signCount)
            } catch let failure as AttestationFailure {
                WebAuthnCommand.report(trace, failure: failure, json: common.json)
            }
        }
    }

    struct Authentication: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An AuthenticationResponseJSON (navigator.credentials.get).")
        @OptionGroup var common: Common
        @Option(help: "The credential's public key: COSE_Key base64url, or a PEM file.") var credentialPublicKey: String
        @Option(help: "The stored signature counter.") var storedSignCount: UInt32 = 0
        @Argument(help: "File holding the AuthenticationResponseJSON.") var file: String

        func run() async throws {
            let party = try common.relyingParty()
            let key = try publicKey()
            let (id, fields) = try WebAuthnCommand.response(file)
            var trace = AttestationTrace()
            do {
                let asserted = try party.verifyAuthentication(
                    clientDataJSON: try WebAuthnCommand.field(fields, "clientDataJSON"),
                    authenticatorData: try WebAuthnCommand.field(fields, "authenticatorData"), signature: try WebAuthnCommand.field(fields, "signature"),
                    challenge: try common.challengeBytes(), publicKey: key, storedSignCount: storedSignCount, trace: &trace)
                WebAuthnCommand.report(
                    trace, failure: nil, json: common.json, credentialID: id.flatMap(Base64URL.decode).map(Array.init), signCount: asserted.signCount)
            } catch let failure as AttestationFailure {
                WebAuthnCommand.report(trace, failure: failure, json: common.json)
            }
        }

        func publicKey() throws -> WebAuthnPublicKey {
            if FileManager.default.fileExists(atPath: credentialPublicKey) {
                let pem = try InputFile.text(credentialPublicKey, option: "--credential-public-key", hint: "A PEM public key (SPKI).")
                if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) { return .es256(key) }
                if let key = try? _RSA.Signing.PublicKey(pemRepresentation: pem) { return .rs256(key) }
                if let document = try? PEMDocument(pemString: pem), let certificateKey = try? Certificate.PublicKey(derEncoded: document.derBytes),
                    let key = Curve25519.Signing.PublicKey(certificateKey)
                {
                    return .eddsa(key)
                }
                throw InputFileError(description: "--credential-public-key \(credentialPublicKey) is not a P-256, Ed25519 or RSA public key in PEM")
            }
            guard let bytes = Base64URL.decode(credentialPublicKey), let cose = try? CBORDecoder.decode(Array(bytes)),
                let key = try? WebAuthnPublicKey(cose: cose)
            else { throw ValidationError("--credential-public-key must be a COSE_Key in base64url or a PEM file") }
            return key
        }
    }
}
