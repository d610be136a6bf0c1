import LatchModel

extension AdminService {
    public func rotateSigningKey() async throws -> AdminKeyRotated {
        AdminKeyRotated(keyId: try await keys.rotate(random: random))
    }
}
