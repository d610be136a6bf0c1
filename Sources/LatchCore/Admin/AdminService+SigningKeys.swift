import LatchJOSE
import LatchModel

extension AdminService {
    public func rotateSigningKey() async throws -> AdminKeyRotated {
        let previous = keys.signer.keyID
        return AdminKeyRotated(
            keyId: try await keys.rotate(random: random) { kid in change("signing_keys", "rotate", "active key \(previous) → \(kid)") })
    }
}
