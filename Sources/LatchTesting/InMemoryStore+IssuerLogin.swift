import Foundation
import LatchCore
import LatchModel

/// Login issuers and resource servers.
extension InMemoryStore.Transaction {
    func insertLoginIssuer(_ issuer: LoginIssuer, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.loginIssuers[issuer.id] == nil else { return refusal }
            state.loginIssuers[issuer.id] = issuer
            return nil
        }
    }

    func deleteLoginIssuer(id: String) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            result.set(state.loginIssuers.removeValue(forKey: id) == nil ? 0 : 1)
            return nil
        }
        return result
    }

    func insertResourceServer(_ server: ResourceServer, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.resourceServers[server.id] == nil else { return refusal }
            state.resourceServers[server.id] = server
            return nil
        }
    }

    func deleteResourceServer(id: String) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            result.set(state.resourceServers.removeValue(forKey: id) == nil ? 0 : 1)
            return nil
        }
        return result
    }
}
