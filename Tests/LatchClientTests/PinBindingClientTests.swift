import Foundation
import LatchApp
import LatchClient
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchTesting
import Testing

/// The SDK's side of PIN binding (docs/fido.md, "PIN binding"): the binding key comes from the client's
/// ``DeviceKeyProvider`` (here ``FakeEnclave``, as the Secure Enclave on iOS) and signs every PIN assertion.
@Suite("UserClient: PIN binding", .serialized)
struct PinBindingClientTests {
    @Test("A PIN sign-up registers a binding key from the key provider; sign-in, wrong PINs (counted, then locked) and a PIN change all carry its signature; a restore onto another device cannot sign and nothing is counted")
    func bindingThroughTheSDK() async throws {
        try await LiveLatch.run(configure: {
            $0.fidoPin.coolDowns = [0]
            $0.fidoPin.maxAttempts = 3
        }) { latch in
            let enclave = FakeEnclave(device: "phone")
            let keyStore = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: keyStore, keyProvider: enclave)
            let pin = PinAuthenticator.forTests()
            try await client.signUpWithFido(pin, pin: "480219", username: "bound-owner")
            // The server holds the binding key the provider made (its public point), and it signed its proof.
            let user = try #require(try await latch.store.user(username: "bound-owner"))
            let stored = try #require(try await latch.store.authenticators(userID: user.id).first)
            #expect(stored.pinBindingKey?.count == PinBinding.publicKeyLength)
            #expect(enclave.signatures.value == 1)

            // The server refuses a bound PIN assertion without its binding signature: signing in proves the SDK sent it.
            try await client.signInWithFido(pin, pin: "480219")
            #expect(try await client.pinStatus().bound == true)

            // A PIN change proves the old PIN with the binding; the binding key stays; the new PIN signs in.
            try await client.changePin(pin, oldPin: "480219", newPin: "735108")
            #expect(try await latch.store.authenticators(userID: user.id).first?.pinBindingKey == stored.pinBindingKey)
            try await client.signInWithFido(pin, pin: "735108")

            // The device's wrong PINs are vouched for by its binding key: counted, and the third locks.
            for remaining in [2, 1, 0] {
                do {
                    try await client.signInWithFido(pin, pin: "000000")
                    Issue.record("a wrong PIN signed in")
                } catch let error as UserClientError {
                    guard error.code == .pinAttemptFailed, let status = error.pinStatus else { throw error }
                    #expect(status.remainingTries == remaining)
                }
            }
            #expect(try await client.pinStatus().state == FidoPinStatus.lockedOut)
            _ = try await latch.store.write { $0.unlockAuthenticator(id: stored.id, userID: user.id, ifMissing: CancellationError()) }

            // The same storage restored onto another device: its enclave cannot use the binding key, so the SDK stops
            // before asking the server — nothing is counted.
            let restored = try UserClient(configuration: latch.configuration(), keyStore: keyStore, keyProvider: FakeEnclave(device: "other"))
            await #expect(throws: UserClientError.deviceKeyLost) { try await restored.signInWithFido(pin, pin: "000000") }
            #expect(try await client.pinStatus().remainingTries == 3)
            try await client.signInWithFido(pin, pin: "735108")
        }
    }

    @Test("The binding messages: registration and assertion messages are domain-separated and length-prefixed; the SDK's pinBinding verifies with the server's check")
    func messages() throws {
        let key = try PrivateKey.generate(.ES256)
        let challenge = [UInt8](repeating: 1, count: 32)
        let credentialID = [UInt8](repeating: 2, count: 32)
        let point = Array(try #require(PinBinding.publicKeyBytes(of: key.publicKey)))
        let registration = PinBinding.registrationMessage(challenge: challenge, credentialID: credentialID, publicKey: point)
        #expect(registration.starts(with: Array("latch pin binding key v1\u{0}".utf8)))
        let unsigned = WebAuthnMessages.assertion(rpID: "latch.test", origin: "https://latch.test", challenge: Base64URL.encode(Data(challenge)))
        let assertion = WebAuthnMessages.assertionJSON(unsigned, credentialID: credentialID, userHandle: nil, signature: Data([1]))
        let bound = try WebAuthnMessages.withPinBinding(assertion, key: key, challenge: challenge, credentialID: credentialID)
        let signature = try #require(bound["pinBinding"]?["signature"]?.stringValue.flatMap { PinBinding.signature(base64URL: $0) })
        let message = PinBinding.assertionMessage(
            challenge: challenge, credentialID: credentialID, authenticatorData: unsigned.authenticatorData, clientDataJSON: unsigned.clientDataJSON)
        #expect(message.starts(with: Array("latch pin binding v1\u{0}".utf8) + [0, 32] + challenge + [0, 32] + credentialID))
        #expect(PinBinding.verifies(signature, publicKey: Data(point), message: message))
        // Another ceremony's challenge, another credential: the signature does not carry over.
        #expect(!PinBinding.verifies(
            signature, publicKey: Data(point),
            message: PinBinding.assertionMessage(
                challenge: [UInt8](repeating: 3, count: 32), credentialID: credentialID, authenticatorData: unsigned.authenticatorData,
                clientDataJSON: unsigned.clientDataJSON)))
        // Sizes are checked before decoding.
        #expect(PinBinding.signature(base64URL: String(repeating: "A", count: 200)) == nil)
        #expect(PinBinding.publicKey(base64URL: Base64URL.encode(Data(repeating: 4, count: 65))) == nil)
    }
}
