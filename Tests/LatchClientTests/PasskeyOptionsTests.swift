import Foundation
import LatchClient
import LatchModel
import Testing

@Suite("Passkey options as the SDK reads them: typed, tolerant of what a newer server adds, precise about what is wrong")
struct PasskeyOptionsTests {
    static let creation = FidoCreationOptions(
        ceremonyId: "lfc_1",
        publicKey: .init(
            rp: .init(id: "login.latch.test", name: "Latch"), user: .init(id: Base64URLBytes("user-1".utf8), name: "ada", displayName: "Ada"),
            challenge: Base64URLBytes([UInt8](repeating: 3, count: 32)), pubKeyCredParams: [.init(alg: -7)], timeout: 300_000,
            excludeCredentials: [.init(id: Base64URLBytes([1, 2, 3]), transports: [.internal])],
            authenticatorSelection: .init(residentKey: .required, userVerification: .required), attestation: .direct))

    static func message(_ body: () throws(UserClientError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return error.message
        }
    }

    @Test("The typed and the JSON forms read alike; members and values a newer server adds are ignored or kept")
    func tolerant() throws {
        let typed = try PasskeyMessages.registrationRequest(from: Self.creation)
        #expect(typed.ceremonyID == "lfc_1" && typed.request.userID == Data("user-1".utf8) && typed.request.displayName == "Ada")
        #expect(typed.request.userVerification == .required && typed.request.attestation == .direct)
        #expect(typed.request.excludedCredentialIDs == [Data([1, 2, 3])])

        guard case .object(var envelope) = Self.creation.json, case .object(var publicKey) = envelope["publicKey"] else {
            Issue.record("the options are not an object")
            return
        }
        envelope["transactionId"] = "oob_1"
        publicKey["hints"] = ["client-device", "a-future-hint"]
        publicKey["attestationFormats"] = ["packed"]
        publicKey["aFutureMember"] = ["nested": [1, 2, 3]]
        publicKey["attestation"] = "a-future-preference"
        envelope["publicKey"] = .object(publicKey)
        let read = try PasskeyMessages.registrationRequest(from: .object(envelope))
        #expect(read.ceremonyID == typed.ceremonyID && read.request.challenge == typed.request.challenge)
        #expect(read.request.attestation == PasskeyAttestationPreference.none, "an unknown preference: WebAuthn's default")
    }

    @Test("A malformed member is refused as invalid input naming it")
    func precise() {
        func refusal(_ change: (inout [String: JSONValue]) -> Void) -> String? {
            guard case .object(var envelope) = Self.creation.json, case .object(var publicKey) = envelope["publicKey"] else { return nil }
            change(&publicKey)
            envelope["publicKey"] = .object(publicKey)
            return Self.message { () throws(UserClientError) in _ = try PasskeyMessages.registrationRequest(from: .object(envelope)) }
        }
        #expect(refusal { $0["rp"] = ["id": "login.latch.test"] }?.contains("publicKey.rp.name") == true)
        #expect(refusal { $0["excludeCredentials"] = [["type": "public-key", "id": "AQ=="]] }?.contains("publicKey.excludeCredentials[0].id") == true)
        #expect(refusal { $0["timeout"] = "soon" }?.contains("publicKey.timeout") == true)
        #expect(refusal { $0["challenge"] = nil }?.contains("publicKey.challenge") == true)
        #expect(Self.message { () throws(UserClientError) in _ = try PasskeyMessages.assertionRequest(from: ["publicKey": [:]]) }?.contains("ceremonyId") == true)
        #expect(Self.message { () throws(UserClientError) in _ = try PasskeyMessages.assertionRequest(from: "options") }?.contains("not a JSON object") == true)
    }
}
