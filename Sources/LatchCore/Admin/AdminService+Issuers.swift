import LatchJOSE
import LatchModel
import Logging

extension AdminService {
    public func addIssuer(_ request: AdminSignOnIssuerRequest) async throws -> AdminSignOnIssuer {
        guard Self.isName(request.name, max: 255) else { throw LatchError.invalidInput("name must be 1–255 printable characters") }
        guard Self.isName(request.keyId, max: 255) else { throw LatchError.invalidInput("keyId must be 1–255 printable characters") }
        let key: PublicKey
        do {
            if let algorithm = request.algorithm {
                guard let algorithm = JWSAlgorithm(rawValue: algorithm) else {
                    throw LatchError(.invalidPublicKey, "algorithm must be RS256, ES256 or ES384")
                }
                key = try PublicKey(pemOrBase64DER: request.publicKey, algorithm: algorithm)
            } else {
                key = try PublicKey(pemOrBase64DER: request.publicKey)
            }
        } catch let error as JOSEError {
            throw LatchError(.invalidPublicKey, error.detail)
        }
        let allowed = request.allowedClaims ?? []
        guard allowed.count <= 64, allowed.allSatisfy({ Self.isName($0, max: 128) }) else {
            throw LatchError.invalidInput("allowedClaims must be at most 64 claim names")
        }
        if let reserved = allowed.first(where: { TokenMinter.reservedClaims.contains($0) }) {
            throw LatchError.invalidInput("\(reserved) is a registered claim and cannot be copied")
        }
        let maxLifetime = request.maxLifetime ?? Int(assertions.defaultIssuerMaxLifetime)
        guard (1...86_400).contains(maxLifetime) else {
            throw LatchError.invalidInput("maxLifetime must be 1–86400 seconds")
        }
        let audience = request.audience ?? assertions.audience
        guard Self.isName(audience, max: 255) else { throw LatchError.invalidInput("audience must be 1–255 printable characters") }
        let issuerKey = SignOnIssuerKey(
            issuer: request.name, keyID: request.keyId, key: key, audience: audience, allowedClaims: allowed,
            maxLifetime: Int64(maxLifetime), createdAt: clock.seconds())
        let event = change(
            "issuers", "create",
            "issuer \(issuerKey.issuer) key \(issuerKey.keyID) \(key.algorithm.rawValue) audience=\(audience) claims=\(allowed.joined(separator: ","))")
        guard try await store.addIssuerKey(issuerKey, recording: event) else {
            throw LatchError(.conflict, "this issuer already has a key with this keyId")
        }
        logger.info("issuer key added", metadata: ["issuer": "\(request.name)", "kid": "\(request.keyId)"])
        return Self.view(issuerKey)
    }

    public func issuers() async throws -> AdminSignOnIssuerList {
        AdminSignOnIssuerList(issuers: try await store.issuerKeys().map(Self.view))
    }

    public func deleteIssuer(_ name: String, keyID: String?) async throws {
        let known = try await store.issuerKeys().contains { $0.issuer == name && (keyID == nil || $0.keyID == keyID) }
        guard known else { throw LatchError.notFound("no such issuer key") }
        let event = change("issuers", "delete", "issuer \(name)" + (keyID.map { " key \($0)" } ?? " (every key)"))
        guard try await store.deleteIssuer(name, keyID: keyID, recording: event) > 0 else { throw LatchError.notFound("no such issuer key") }
        logger.info("issuer removed", metadata: ["issuer": "\(name)"])
    }

    static func view(_ key: SignOnIssuerKey) -> AdminSignOnIssuer {
        AdminSignOnIssuer(
            name: key.issuer, keyId: key.keyID, algorithm: key.key.algorithm.rawValue, audience: key.audience,
            allowedClaims: key.allowedClaims, maxLifetime: Int(key.maxLifetime), publicKey: key.key.pemRepresentation,
            createdAt: key.createdAt)
    }
}
