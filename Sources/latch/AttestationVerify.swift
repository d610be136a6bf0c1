import ArgumentParser
import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// `latch attestation verify`: the server's verifiers, offline, for operators ("why is this phone refused?") and
/// for evidence captured elsewhere. Exit 0 verified, 1 refused, 2 bad usage.
struct AttestationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestation", abstract: "Device attestation tools.", subcommands: [Verify.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify attestation evidence offline, step by step, with Latch's own verifiers.",
            subcommands: [AppAttestAttestation.self, AppAttestAssertion.self, AndroidKey.self])
    }

    /// Options every verification takes.
    struct Output: ParsableArguments {
        @Flag(help: "Print {verified, error, steps, publicKey, counter} as JSON.") var json = false
    }

    /// Prints the outcome and exits 0 (verified) or 1 (refused).
    static func report(_ trace: AttestationTrace, failure: AttestationFailure?, publicKey: String?, counter: UInt32?, json: Bool) throws -> Never {
        if json {
            let steps: [JSONValue] = trace.steps.map { .object(["step": .string($0.name), "ok": .bool($0.ok), "detail": .string($0.detail)]) }
            let answer: JSONValue = .object([
                "verified": .bool(failure == nil), "error": failure.map { .string($0.code.rawValue) } ?? .null, "steps": .array(steps),
                "publicKey": publicKey.map(JSONValue.string) ?? .null, "counter": counter.map { .int(Int64($0)) } ?? .null,
            ])
            print(String(decoding: answer.serialized(), as: UTF8.self))
        } else {
            for step in trace.steps { print("\(step.ok ? "ok  " : "FAIL") \(step.name): \(step.detail)") }
            print(failure.map { "refused: \($0.code.rawValue)" } ?? "verified")
        }
        Foundation.exit(failure == nil ? 0 : 1)
    }

    static func date(_ text: String?) throws -> Date {
        guard let text else { return Date() }
        guard let date = try? Date(text, strategy: .iso8601) else { throw ValidationError("--at must be an ISO 8601 time like 2024-04-18T12:00:00Z") }
        return date
    }

    static func hexBytes(_ text: String, option: String) throws -> [UInt8] {
        guard let bytes = Hex.decode(text.replacingOccurrences(of: ":", with: "")) else { throw ValidationError("\(option) must be hexadecimal") }
        return bytes
    }

    static func base64File(_ path: String, option: String) throws -> [UInt8] {
        let text = try InputFile.text(path, option: option, hint: "It holds the base64 evidence.")
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines), options: .ignoreUnknownCharacters) else {
            throw InputFileError(description: "\(option) \(path) is not base64")
        }
        return Array(data)
    }

    /// The roots of `files` (PEM), or the built-in ones (or none) when no file is given.
    static func anchors(_ files: [String], builtIn: String?) throws -> TrustAnchors {
        guard !files.isEmpty else { return try builtIn.map { try TrustAnchors(pem: $0) } ?? TrustAnchors([]) }
        var roots: [Certificate] = []
        for file in files {
            do {
                roots += try TrustAnchors(pem: try InputFile.text(file, option: "--root", hint: "A PEM certificate file.")).roots
            } catch let failure as AttestationFailure {
                throw InputFileError(description: "--root \(file): \(failure.detail)")
            }
        }
        return TrustAnchors(roots)
    }

    struct AppAttestAttestation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-attest", abstract: "An App Attest attestation object (Apple's steps 1–9).")
        @Option(help: "The App ID TEAMID.bundleId.") var appId: String
        @Option(help: "production or development.") var environment: String
        @Option(help: "The base64 key id.") var keyId: String
        @Option(help: "The bytes the app passed to attestKey, hex (any length).") var clientDataHash: String
        @Option(help: "Verification time, ISO 8601 (default now).") var at: String?
        @Option(help: "PEM root(s) instead of Apple's App Attest root.") var root: [String] = []
        @OptionGroup var output: Output
        @Argument(help: "File holding the base64 attestation object.") var file: String

        func run() async throws {
            guard let environment = AppAttest.Environment(rawValue: environment) else { throw ValidationError("--environment must be production or development") }
            guard let keyID = Data(base64Encoded: keyId) else { throw ValidationError("--key-id must be base64") }
            let object = try AttestationCommand.base64File(file, option: "file")
            let validator = CertificateChainValidator(anchors: try AttestationCommand.anchors(root, builtIn: KnownRoots.appleAppAttestation))
            var trace = AttestationTrace()
            do {
                let verified = try AppAttest.verifyAttestation(
                    object, keyID: Array(keyID), clientDataHash: try AttestationCommand.hexBytes(clientDataHash, option: "--client-data-hash"),
                    apps: [.init(appID: appId, environment: environment)], chains: validator, at: try AttestationCommand.date(at), trace: &trace)
                try AttestationCommand.report(
                    trace, failure: nil, publicKey: PublicKey(p256: verified.publicKey).pemRepresentation, counter: verified.counter, json: output.json)
            } catch let failure as AttestationFailure {
                try AttestationCommand.report(trace, failure: failure, publicKey: nil, counter: nil, json: output.json)
            }
        }
    }

    struct AppAttestAssertion: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-attest-assertion", abstract: "An App Attest assertion by a known key.")
        @Option(help: "PEM file of the attested public key.") var publicKey: String
        @Option(help: "The App ID TEAMID.bundleId.") var appId: String
        @Option(help: "SHA-256 of the client data the app asserted, hex.") var clientDataHash: String
        @Option(help: "The counter of the last accepted assertion.") var previousCounter: UInt32
        @OptionGroup var output: Output
        @Argument(help: "File holding the base64 assertion.") var file: String

        func run() async throws {
            let pem = try InputFile.text(publicKey, option: "--public-key", hint: "A PEM public key (SPKI).")
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: pem) else {
                throw InputFileError(description: "--public-key \(publicKey) is not a P-256 public key in PEM")
            }
            let assertion = try AttestationCommand.base64File(file, option: "file")
            var trace = AttestationTrace()
            do {
                let verified = try AppAttest.verifyAssertion(
                    assertion, clientDataHash: try AttestationCommand.hexBytes(clientDataHash, option: "--client-data-hash"), publicKey: key,
                    apps: [.init(appID: appId, environment: .production)], previousCounter: previousCounter, trace: &trace)
                try AttestationCommand.report(trace, failure: nil, publicKey: pem.trimmingCharacters(in: .whitespacesAndNewlines), counter: verified.counter, json: output.json)
            } catch let failure as AttestationFailure {
                try AttestationCommand.report(trace, failure: failure, publicKey: nil, counter: nil, json: output.json)
            }
        }
    }

    struct AndroidKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "android-key", abstract: "An Android key attestation chain (PEM, leaf first).")
        @Option(help: "The attestation challenge, hex.") var challenge: String
        @Option(help: "The app's package name (checks the application id).") var package: String?
        @Option(help: "SHA-256 of a signing certificate allowed for --package, hex (repeatable).") var signatureDigest: [String] = []
        @Option(help: "software, tee or strongbox.") var minSecurityLevel = "tee"
        @Flag(help: "Require a verified boot and a locked bootloader.") var requireVerifiedBoot = false
        @Option(help: "Verification time, ISO 8601 (default now).") var at: String?
        @Option(help: "PEM root(s) instead of Google's hardware attestation roots (repeatable).") var root: [String] = []
        @OptionGroup var output: Output
        @Argument(help: "File holding the PEM chain, leaf first.") var file: String

        func run() async throws {
            let level: AndroidKeyDescription.SecurityLevel = switch minSecurityLevel {
            case "software": .software
            case "tee": .trustedEnvironment
            case "strongbox": .strongBox
            default: throw ValidationError("--min-security-level must be software, tee or strongbox")
            }
            let text = try InputFile.text(file, option: "file", hint: "A PEM certificate chain, leaf first.")
            let chain: [[UInt8]]
            do {
                chain = try PEMDocument.parseMultiple(pemString: text.replacingOccurrences(of: "\r", with: "")).map(\.derBytes)
            } catch {
                throw InputFileError(description: "file \(file) is not a PEM certificate chain")
            }
            var apps: [String: Set<[UInt8]>]?
            if let package {
                apps = [package: Set(try signatureDigest.map { try AttestationCommand.hexBytes($0, option: "--signature-digest") })]
            }
            let validator = CertificateChainValidator(
                anchors: try AttestationCommand.anchors(root, builtIn: KnownRoots.googleHardwareAttestation), rules: AndroidKeyAttestation.chainRules)
            var trace = AttestationTrace()
            do {
                let verified = try AndroidKeyAttestation.verify(
                    chain: chain, challenge: try AttestationCommand.hexBytes(challenge, option: "--challenge"), apps: apps,
                    policy: .init(minimumSecurityLevel: level, requireVerifiedBoot: requireVerifiedBoot), chains: validator,
                    at: try AttestationCommand.date(at), trace: &trace)
                try AttestationCommand.report(trace, failure: nil, publicKey: verified.publicKey.pemRepresentation, counter: nil, json: output.json)
            } catch let failure as AttestationFailure {
                try AttestationCommand.report(trace, failure: failure, publicKey: nil, counter: nil, json: output.json)
            }
        }
    }
}
