import LatchJOSE
import LatchModel

extension AdminService {
    /// Rotates the active key of each algorithm in use (the deployment's, and RS256 or ES256 once a client asked for
    /// it); answers the deployment algorithm's new key.
    public func rotateSigningKey() async throws -> AdminKeyRotated {
        let previous = keys.signer.keyID
        let kids = try await keys.rotateAll(random: random) { kid in change("signing_keys", "rotate", "active key → \(kid) (was \(previous) for the deployment's algorithm)") }
        return AdminKeyRotated(keyId: kids[0])
    }
}
