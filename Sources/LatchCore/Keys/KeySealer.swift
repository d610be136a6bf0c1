import Crypto
import Foundation
import LatchModel

/// Seals private keys at rest with the deployment's key-encryption key (AES-256-GCM).
///
/// The key-encryption key never enters the store: it comes from configuration or a 0600 file beside the data.
/// Every replica of one deployment must be given the same one.
public struct KeySealer: Sendable {
    private let key: SymmetricKey

    /// Uses a 32-byte key-encryption key.
    public init(keyEncryptionKey: some ContiguousBytes) throws {
        let key = SymmetricKey(data: keyEncryptionKey)
        guard key.bitCount == 256 else {
            throw LatchError(.invalidInput, "the key-encryption key must be 32 bytes")
        }
        self.key = key
    }

    /// AES-GCM `nonce || ciphertext || tag`, with the key id as associated data so a sealed key cannot be
    /// swapped for another row's.
    public func seal(_ plaintext: Data, keyID: String) throws -> Data {
        guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: Data(keyID.utf8)).combined else {
            throw LatchError(.serverError, "sealing failed")
        }
        return combined
    }

    /// Opens what ``seal(_:keyID:)`` produced; throws when the key-encryption key is wrong.
    public func open(_ sealed: Data, keyID: String) throws -> Data {
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Data(keyID.utf8))
        } catch {
            throw LatchError(
                .serverError, "a signing key cannot be opened: the key-encryption key differs from the one that sealed it")
        }
    }
}
