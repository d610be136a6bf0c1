import Foundation
import LatchCore
import LatchModel

/// Issuer keys, test registration keys, clients with their evidence and certificates, signing keys.
extension InMemoryStore.Transaction {
    func insertIssuerKey(_ key: SignOnIssuerKey, ifTaken refusal: any Error & Sendable) {
        apply { state in
            let id = InMemoryStore.SignOnIssuerKeyID(issuer: key.issuer, keyID: key.keyID)
            guard state.issuerKeys[id] == nil else { return refusal }
            state.issuerKeys[id] = key
            return nil
        }
    }

    func deleteIssuerKeys(issuer: String, keyID: String?) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            let doomed = state.issuerKeys.keys.filter { $0.issuer == issuer && (keyID == nil || $0.keyID == keyID) }
            for id in doomed { state.issuerKeys[id] = nil }
            result.set(doomed.count)
            return nil
        }
        return result
    }

    func insertTestRegistrationKey(_ key: TestRegistrationKey, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.testKeys[key.keyID] == nil else { return refusal }
            state.testKeys[key.keyID] = key
            return nil
        }
    }

    func deleteTestRegistrationKey(id: String, ifMissing refusal: any Error & Sendable) {
        apply { state in state.testKeys.removeValue(forKey: id) == nil ? refusal : nil }
    }

    func deleteTestRegistrationKeys(owner: String) {
        apply { state in
            state.testKeys = state.testKeys.filter { $0.value.owner != owner }
            return nil
        }
    }

    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.clients[client.id] == nil else { return refusal }
            state.clients[client.id] = client
            return nil
        }
    }

    func updateClientEvidence(id: String, evidence: ClientEvidence, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.clients[id] != nil else { return refusal }
            state.clients[id]?.evidence = evidence
            return nil
        }
    }

    func insertSigningCertificate(_ certificate: SigningCertificate, ifTaken refusal: any Error & Sendable) {
        apply { state in
            let id = InMemoryStore.SigningCertificateID(clientID: certificate.clientID, sha256: certificate.sha256)
            guard state.clients[certificate.clientID] != nil, state.signingCertificates[id] == nil else { return refusal }
            state.signingCertificates[id] = certificate
            return nil
        }
    }

    func deleteSigningCertificate(clientID: String, sha256: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            state.signingCertificates.removeValue(forKey: InMemoryStore.SigningCertificateID(clientID: clientID, sha256: sha256)) == nil ? refusal : nil
        }
    }

    func deleteSigningCertificates(owner: String) {
        apply { state in
            state.signingCertificates = state.signingCertificates.filter { $0.value.owner != owner }
            return nil
        }
    }

    func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.clients.removeValue(forKey: id) != nil else { return refusal }
            state.signingCertificates = state.signingCertificates.filter { $0.key.clientID != id }
            for (sessionID, session) in state.sessions where session.clientID == id { state.removeSession(id: sessionID) }
            return nil
        }
    }

    func activateSigningKey(_ key: SigningKeyRecord) {
        apply { state in
            for (id, record) in state.signingKeys where record.retiredAt == nil && record.algorithm == key.algorithm {
                state.signingKeys[id]?.retiredAt = key.createdAt
            }
            state.signingKeys[key.keyID] = key
            return nil
        }
    }

    func deleteSigningKeys(retiredBefore cutoff: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            let doomed = state.signingKeys.values.filter { ($0.retiredAt ?? .max) < cutoff }.map(\.keyID)
            for id in doomed { state.signingKeys[id] = nil }
            result.set(doomed.count)
            return nil
        }
        return result
    }
}
