import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// The WebAuthn options the server sends, member by member: what the typed options encode is what the untyped trees
/// sent before them (the console's JavaScript, the SDK and python-fido2 read these names and values).
@Suite("FIDO options on the wire")
struct FidoOptionsWireTests {
    /// `options` with its challenge and ceremony id (random) checked and replaced by placeholders.
    static func fixed(_ options: JSONValue) throws -> JSONValue {
        guard case .object(var envelope) = options, case .object(var publicKey) = envelope["publicKey"] else { throw Unexpected() }
        #expect(Base64URL.decode(try #require(publicKey["challenge"]?.stringValue))?.count == 32)
        #expect(envelope["ceremonyId"]?.stringValue?.isEmpty == false)
        publicKey["challenge"] = "C"
        envelope["publicKey"] = .object(publicKey)
        envelope["ceremonyId"] = "I"
        return .object(envelope)
    }

    struct Unexpected: Error {}

    static let algorithms: JSONValue = .array([-7, -8, -257].map { ["type": "public-key", "alg": .int($0)] })

    @Test("Registration, sign-up and sign-in options of users' authenticators")
    func userOptions() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("alice")
        let device = engines.authenticator()
        try await FidoServiceTests.register(device, for: user, with: fido)
        let credential = JSONValue.string(device.credentialIDString)

        let registration = try Self.fixed(try await fido.registrationOptions(for: user))
        let expected: JSONValue = [
            "ceremonyId": "I",
            "publicKey": [
                "challenge": "C", "rp": ["id": "latch.test", "name": "latch.test"],
                "user": ["id": .string(Base64URL.encode(Data("alice".utf8))), "name": "alice", "displayName": "alice"],
                "pubKeyCredParams": Self.algorithms, "timeout": 300_000, "excludeCredentials": [["type": "public-key", "id": credential]],
                "authenticatorSelection": ["residentKey": "preferred", "requireResidentKey": false, "userVerification": "preferred"],
                "attestation": "none",
            ],
        ]
        #expect(registration == expected)

        let signUp = try Self.fixed(try await fido.signUpOptions(username: "bob"))
        #expect(signUp["publicKey"]?["authenticatorSelection"] == ["residentKey": "required", "requireResidentKey": true, "userVerification": "preferred"])
        #expect(signUp["publicKey"]?["excludeCredentials"] == [] && signUp["publicKey"]?["user"]?["name"] == "bob")

        let signIn = try Self.fixed(try await fido.authenticationOptions(username: "alice"))
        #expect(
            signIn == [
                "ceremonyId": "I",
                "publicKey": [
                    "challenge": "C", "rpId": "latch.test", "allowCredentials": [["type": "public-key", "id": credential]],
                    "userVerification": "preferred", "timeout": 300_000,
                ],
            ])
        let discoverable = try Self.fixed(try await fido.authenticationOptions(username: nil))
        #expect(discoverable["publicKey"]?["allowCredentials"] == [])
    }

    @Test("The console's passkey enrollment and sign-in options")
    func consoleOptions() async throws {
        let console = try await AdminSignInTests()
        let enrollment = try Self.fixed(try await console.signIn.enrollmentOptions(ticket: try await console.ticket()))
        let root = AdminAccount.rootID
        let username = try #require(enrollment["publicKey"]?["user"]?["name"]?.stringValue)
        #expect(
            enrollment == [
                "ceremonyId": "I",
                "publicKey": [
                    "challenge": "C", "rp": ["id": "latch.test", "name": "Latch console"],
                    "user": ["id": .string(Base64URL.encode(Data(root.utf8))), "name": .string(username), "displayName": .string(username)],
                    "pubKeyCredParams": Self.algorithms, "timeout": 300_000, "excludeCredentials": [],
                    "authenticatorSelection": ["residentKey": "required", "requireResidentKey": true, "userVerification": "required"],
                    "attestation": "none",
                ],
            ])
        #expect(
            try Self.fixed(console.signIn.signInOptions()) == [
                "ceremonyId": "I",
                "publicKey": ["challenge": "C", "rpId": "latch.test", "allowCredentials": [], "userVerification": "required", "timeout": 300_000],
            ])
    }
}
