import Foundation
import LatchJOSE

/// One of Latch's own signing keys as stored: the private half sealed with the deployment's key-encryption key.
public struct SigningKeyRecord: Sendable {
    public var keyID: String
    public var algorithm: JWSAlgorithm
    /// AES-GCM sealed PKCS#8 PEM.
    public var sealedPrivateKey: Data
    /// SPKI DER of the public key.
    public var publicKeyDER: Data
    public var createdAt: Int64
    /// When a newer key took over; the key stays published until every token it signed has expired.
    public var retiredAt: Int64?

    public init(
        keyID: String, algorithm: JWSAlgorithm, sealedPrivateKey: Data, publicKeyDER: Data, createdAt: Int64,
        retiredAt: Int64?
    ) {
        self.keyID = keyID
        self.algorithm = algorithm
        self.sealedPrivateKey = sealedPrivateKey
        self.publicKeyDER = publicKeyDER
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}

/// Reading Latch's own signing keys.
public protocol SigningKeyStore: Sendable {
    /// Every key, oldest first.
    func signingKeys() async throws -> [SigningKeyRecord]
}

/// Writing signing keys inside a unit of work.
public protocol SigningKeyWrites {
    /// Adds `key` as the active key of its algorithm and retires every other unretired key of that algorithm at
    /// `key.createdAt` (each algorithm has its own active key).
    func activateSigningKey(_ key: SigningKeyRecord)
    /// Deletes keys retired before `cutoff`; reports how many.
    func deleteSigningKeys(retiredBefore cutoff: Int64) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Adds `key` as the active key of its algorithm, retiring the others of that algorithm, in one transaction.
    public func activateSigningKey(_ key: SigningKeyRecord) async throws {
        try await write { $0.activateSigningKey(key) }
    }

    /// Deletes keys retired before `cutoff`; returns how many.
    public func deleteSigningKeys(retiredBefore cutoff: Int64) async throws -> Int {
        try await count { $0.deleteSigningKeys(retiredBefore: cutoff) }
    }
}
