import LatchJOSE

/// A public client (an app).
public struct Client: Sendable, Hashable {
    public var id: String
    public var name: String
    public var createdAt: Int64
    /// What proves this app's devices genuine: Apple App IDs, Android package names, their keys.
    public var evidence: ClientEvidence

    public init(id: String, name: String, createdAt: Int64, evidence: ClientEvidence = ClientEvidence()) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.evidence = evidence
    }

    /// The algorithm its ID tokens are signed with, when it chose one (``ClientEvidence/idTokenSignedResponseAlg``).
    public var idTokenAlgorithm: JWSAlgorithm? { evidence.idTokenSignedResponseAlg.flatMap(JWSAlgorithm.init(rawValue:)) }
}

/// A signing-certificate fingerprint of an Android app (SHA-256 of the certificate's DER, lowercase hex), owned by
/// the admin account that added it.
public struct SigningCertificate: Sendable, Hashable {
    public var clientID: String
    public var sha256: String
    /// The id of the admin account that added it.
    public var owner: String
    public var createdAt: Int64

    public init(clientID: String, sha256: String, owner: String, createdAt: Int64) {
        self.clientID = clientID
        self.sha256 = sha256
        self.owner = owner
        self.createdAt = createdAt
    }
}

/// Reading clients.
public protocol ClientStore: Sendable {
    /// Every client, ordered by id.
    func clients() async throws -> [Client]
    /// Every signing certificate, ordered by client id and fingerprint.
    func signingCertificates() async throws -> [SigningCertificate]
}

/// Writing clients inside a unit of work.
public protocol ClientWrites {
    /// Inserts a client; refuses when one with its id exists.
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable)
    /// Deletes a client and its sessions; refuses when there is no such client.
    func deleteClient(id: String, ifMissing refusal: any Error & Sendable)
    /// Replaces a client's evidence settings; refuses when there is no such client.
    func updateClientEvidence(id: String, evidence: ClientEvidence, ifMissing refusal: any Error & Sendable)
    /// Adds a signing certificate; refuses when the client has it already (or the client does not exist).
    func insertSigningCertificate(_ certificate: SigningCertificate, ifTaken refusal: any Error & Sendable)
    /// Removes a client's signing certificate; refuses when it has none with this fingerprint.
    func deleteSigningCertificate(clientID: String, sha256: String, ifMissing refusal: any Error & Sendable)
    /// Removes every signing certificate `owner` added.
    func deleteSigningCertificates(owner: String)
}

extension UnitOfWork {
    /// Adds a client; `false` when the id exists already.
    public func addClient(_ client: Client, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertClient(client, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Deletes a client and its sessions; `false` when there was none.
    public func deleteClient(id: String, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.deleteClient(id: id, ifMissing: refusal)
            if let event { transaction.record(event) }
        }
    }
}
