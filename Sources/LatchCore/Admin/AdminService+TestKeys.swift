import LatchJOSE
import LatchModel
import Logging

extension AdminService {
    /// Creates a test registration key owned by admin account `owner` (it is deleted with that account).
    public func createTestKey(_ request: AdminTestKeyRequest, owner: String? = nil) async throws -> AdminTestKeyCreated {
        // The SDKs' default key id is `register_key`: the first key gets it unless another id is asked for.
        let keyID: String
        if let requested = request.keyId {
            keyID = requested
        } else {
            keyID = try await store.testRegistrationKey(id: "register_key") == nil ? "register_key" : "tk_" + random.token(byteCount: 9)
        }
        guard Self.isName(keyID, max: 128) else { throw LatchError.invalidInput("keyId must be 1–128 printable characters") }
        guard let algorithm = JWSAlgorithm(rawValue: request.algorithm ?? "RS256") else {
            throw LatchError.invalidInput("algorithm must be RS256, ES256 or ES384")
        }
        let privateKey = try PrivateKey.generate(algorithm)
        let event = change("test_keys", "create", "test key \(keyID) \(algorithm.rawValue) owner \(owner ?? "none")")
        guard
            try await store.addTestRegistrationKey(
                TestRegistrationKey(keyID: keyID, key: privateKey.publicKey, createdAt: clock.seconds(), owner: owner), recording: event)
        else {
            throw LatchError(.conflict, "a test key with this keyId exists")
        }
        logger.info("test registration key created", metadata: ["kid": "\(keyID)"])
        return AdminTestKeyCreated(
            keyId: keyID, algorithm: algorithm.rawValue, privateKey: privateKey.pemRepresentation,
            publicKey: privateKey.publicKey.pemRepresentation)
    }

    public func testKeys() async throws -> AdminTestKeyList {
        AdminTestKeyList(
            testKeys: try await store.testRegistrationKeys().map {
                AdminTestKey(keyId: $0.keyID, algorithm: $0.key.algorithm.rawValue, publicKey: $0.key.pemRepresentation, createdAt: $0.createdAt)
            })
    }

    public func deleteTestKey(id: String) async throws {
        guard try await store.deleteTestRegistrationKey(id: id, recording: change("test_keys", "delete", "test key \(id)")) else { throw LatchError.notFound("no such test key") }
        logger.info("test registration key revoked", metadata: ["kid": "\(id)"])
    }
}
