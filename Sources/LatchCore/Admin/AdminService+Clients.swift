import LatchJOSE
import LatchModel

extension AdminService {
    public func addClient(_ request: AdminClientRequest) async throws -> AdminClient {
        guard Self.isName(request.clientId, max: 128) else {
            throw LatchError.invalidInput("clientId must be 1–128 printable characters")
        }
        if let name = request.name, !Self.isName(name, max: 255) { throw LatchError.invalidInput("name must be 1–255 printable characters") }
        let algorithm = try await checkedIDTokenAlgorithm(request.idTokenSignedResponseAlg)
        let client = Client(
            id: request.clientId, name: request.name ?? request.clientId, createdAt: clock.seconds(),
            evidence: ClientEvidence(idTokenSignedResponseAlg: algorithm))
        guard try await store.addClient(client, recording: change("clients", "create", "client \(client.id)")) else { throw LatchError(.conflict, "this client exists") }
        try await clients.reload()
        return Self.adminClient(client)
    }

    public func clientList() async throws -> AdminClientList {
        AdminClientList(clients: try await store.clients().map(Self.adminClient))
    }

    /// A client as the admin API shows it: evidence settings without their secrets.
    static func adminClient(_ client: Client) -> AdminClient {
        AdminClient(
            clientId: client.id, name: client.name, createdAt: client.createdAt,
            ios: client.evidence.ios.map { ios in
                AdminIOSEvidence(
                    appIds: ios.appIds, appAttestEnvironment: ios.appAttestEnvironment,
                    deviceCheck: ios.deviceCheck.map { AdminDeviceCheck(teamId: $0.teamId, keyId: $0.keyId, hasPrivateKey: true) })
            },
            android: client.evidence.android.map { android in
                AdminAndroidEvidence(
                    packageNames: android.packageNames,
                    playIntegrity: android.playIntegrity.map { AdminPlayIntegrity(verificationKey: $0.verificationKey, hasDecryptionKey: true) },
                    requestHashMode: android.requestHashMode)
            },
            dpop: (client.evidence.dpop ?? .default).mode.rawValue, dpopAttested: (client.evidence.dpop ?? .default).attested,
            redirectUris: client.evidence.federation?.redirectUris, postLogoutRedirectUris: client.evidence.federation?.postLogoutRedirectUris,
            upstreamIdps: client.evidence.federation?.upstreamIdps,
            idTokenSignedResponseAlg: client.evidence.idTokenSignedResponseAlg)
    }

    /// `idTokenSignedResponseAlg` checked: `ES256` or `RS256`, whose signing key then exists (made now for the first
    /// client that asks for it, so that it is published before the client's first sign-in).
    func checkedIDTokenAlgorithm(_ name: String?) async throws -> String? {
        guard let name else { return nil }
        guard let algorithm = JWSAlgorithm(rawValue: name), JWSAlgorithm.signing.contains(algorithm) else {
            throw LatchError.invalidInput("idTokenSignedResponseAlg must be ES256 or RS256")
        }
        _ = try await keys.signer(for: algorithm, random: random)
        return name
    }

    public func deleteClient(id: String) async throws {
        guard id != clients.defaultClientID else { throw LatchError(.conflict, "the default client cannot be deleted") }
        guard try await store.deleteClient(id: id, recording: change("clients", "delete", "client \(id)")) else { throw LatchError.notFound("no such client") }
        try await clients.reload()
        try await evidenceApps?.reload()
    }

    /// The configuration file for an app of client `clientID`, served from `issuer`.
    public func clientConfig(clientID: String, issuer: String) async throws -> AdminClientConfig {
        guard try await store.clients().contains(where: { $0.id == clientID }) else { throw LatchError.notFound("no such client") }
        return AdminClientConfig(serverURL: issuer, clientId: clientID, audience: assertions.audience, namespace: clientID)
    }
}
