import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Latch's own signing keys: one active signer per algorithm, the public keys still published, and the JWKS.
///
/// Loaded from the store at start (a first key for the deployment's algorithm is generated when there is none) and
/// reloaded periodically, so a key rotated by another process or replica is picked up. A retired key stays published
/// for `publicationAfterRetirement` seconds — at least the longest lifetime of a token it signed, plus skew.
///
/// The deployment's algorithm (`keys.algorithm`, ES256 by default) signs access tokens and the ID tokens of most
/// clients; a client registered with `idTokenSignedResponseAlg` (OpenID Connect Dynamic Client Registration 1.0 §2
/// `id_token_signed_response_alg`) gets ID tokens signed by the active key of that algorithm, made the first time one
/// is needed (an RSA key is slow to generate) and from then on published, and rotated, beside the other.
public final class SigningKeyRing: Sendable {
    /// What one load of the store yields; swapped atomically.
    struct Snapshot: Sendable {
        /// The deployment algorithm's active key.
        var signer: JWSSigner
        /// The active key of each algorithm that has one.
        var signers: [JWSAlgorithm: JWSSigner]
        var verificationKeys: [String: PublicKey]
        var jwksJSON: [UInt8]
    }

    /// The algorithms Latch can sign ID tokens with (`id_token_signing_alg_values_supported`), the deployment's first.
    public var idTokenAlgorithms: [JWSAlgorithm] { [algorithm] + JWSAlgorithm.signing.filter { $0 != algorithm } }

    private let snapshot: Locked<Snapshot>
    /// When a reload was last asked for by an unknown `kid` (rate limit).
    private let lastMissReload = Locked<Int64?>(nil)
    private let store: any SigningKeyStore & UnitOfWork
    private let sealer: KeySealer
    private let clock: LatchClock
    private let algorithm: JWSAlgorithm
    private let publicationAfterRetirement: Int64
    private let logger: Logger

    private init(
        snapshot: Snapshot, store: any SigningKeyStore & UnitOfWork, sealer: KeySealer, clock: LatchClock, algorithm: JWSAlgorithm,
        publicationAfterRetirement: Int64, logger: Logger
    ) {
        self.snapshot = Locked(snapshot)
        self.store = store
        self.sealer = sealer
        self.clock = clock
        self.algorithm = algorithm
        self.publicationAfterRetirement = publicationAfterRetirement
        self.logger = logger
    }

    /// Loads the keys, generating and storing a first key for `algorithm` when the store has none.
    public static func load(
        store: any SigningKeyStore & UnitOfWork, sealer: KeySealer, clock: LatchClock, random: RandomSource, algorithm: JWSAlgorithm,
        publicationAfterRetirement: Int64, logger: Logger = Logger(label: "latch.keys")
    ) async throws -> SigningKeyRing {
        var records = try await store.signingKeys()
        if !records.contains(where: { $0.retiredAt == nil && $0.algorithm == algorithm }) {
            let record = try makeRecord(algorithm: algorithm, sealer: sealer, clock: clock, random: random)
            try await store.activateSigningKey(record)
            logger.info("generated a signing key", metadata: ["kid": "\(record.keyID)", "alg": "\(algorithm.rawValue)"])
            records = try await store.signingKeys()
        }
        let snapshot = try makeSnapshot(
            records, algorithm: algorithm, sealer: sealer, now: clock.seconds(), publicationAfterRetirement: publicationAfterRetirement)
        return SigningKeyRing(
            snapshot: snapshot, store: store, sealer: sealer, clock: clock, algorithm: algorithm,
            publicationAfterRetirement: publicationAfterRetirement, logger: logger)
    }

    /// Generates a new key for `algorithm`, makes it that algorithm's active key and retires the previous one of that
    /// algorithm; returns its `kid`.
    @discardableResult
    public static func rotate(
        store: any SigningKeyStore & UnitOfWork, sealer: KeySealer, clock: LatchClock, random: RandomSource, algorithm: JWSAlgorithm,
        recording event: ((String) -> SecurityEvent)? = nil
    ) async throws -> String {
        let record = try makeRecord(algorithm: algorithm, sealer: sealer, clock: clock, random: random)
        let recorded = event?(record.keyID)
        try await store.write { transaction in
            transaction.activateSigningKey(record)
            if let recorded { transaction.record(recorded) }
        }
        return record.keyID
    }

    /// Rotates through this ring's store and reloads.
    @discardableResult
    public func rotate(random: RandomSource, algorithm: JWSAlgorithm? = nil, recording event: ((String) -> SecurityEvent)? = nil) async throws
        -> String
    {
        let kid = try await Self.rotate(
            store: store, sealer: sealer, clock: clock, random: random, algorithm: algorithm ?? self.algorithm, recording: event)
        try await reload()
        return kid
    }

    /// Rotates the active key of every algorithm that has one (the deployment's first) and reloads; returns the new
    /// kids in that order.
    public func rotateAll(random: RandomSource, recording event: ((String) -> SecurityEvent)? = nil) async throws -> [String] {
        let active = snapshot.withLock { Set($0.signers.keys) }
        var kids: [String] = []
        for algorithm in idTokenAlgorithms where algorithm == self.algorithm || active.contains(algorithm) {
            kids.append(try await Self.rotate(store: store, sealer: sealer, clock: clock, random: random, algorithm: algorithm, recording: event))
        }
        try await reload()
        return kids
    }

    /// The active signer for `algorithm`: read again from the store when this replica has none (another may have made
    /// it), else generated and stored — the first ID token a client asks to have signed with it.
    public func signer(for algorithm: JWSAlgorithm, random: RandomSource) async throws -> JWSSigner {
        if let signer = snapshot.withLock({ $0.signers[algorithm] }) { return signer }
        try await reload()
        if let signer = snapshot.withLock({ $0.signers[algorithm] }) { return signer }
        guard JWSAlgorithm.signing.contains(algorithm) else { throw LatchError(.serverError, "Latch does not sign with \(algorithm.rawValue)") }
        let kid = try await Self.rotate(store: store, sealer: sealer, clock: clock, random: random, algorithm: algorithm)
        logger.info("generated a signing key", metadata: ["kid": "\(kid)", "alg": "\(algorithm.rawValue)"])
        try await reload()
        guard let signer = snapshot.withLock({ $0.signers[algorithm] }) else { throw LatchError(.serverError, "no active \(algorithm.rawValue) signing key") }
        return signer
    }

    /// Re-reads the store.
    public func reload() async throws {
        let records = try await store.signingKeys()
        let fresh = try Self.makeSnapshot(
            records, algorithm: algorithm, sealer: sealer, now: clock.seconds(), publicationAfterRetirement: publicationAfterRetirement)
        let previous = snapshot.withLock { current in
            let previous = current.signer.keyID
            current = fresh
            return previous
        }
        if previous != fresh.signer.keyID {
            logger.info("signing key changed", metadata: ["kid": "\(fresh.signer.keyID)"])
        }
    }

    /// The deployment algorithm's active signer.
    public var signer: JWSSigner { snapshot.withLock { $0.signer } }

    /// The published key with this `kid`, if any.
    public func verificationKey(kid: String) -> PublicKey? { snapshot.withLock { $0.verificationKeys[kid] } }

    /// The key with this `kid`; an unknown one first reloads from the store (at most once a second), so a key
    /// rotated on another replica is found before its tokens are refused.
    public func verificationKeyReloading(kid: String) async throws -> PublicKey? {
        if let key = verificationKey(kid: kid) { return key }
        let now = clock.seconds()
        let due = lastMissReload.withLock { last in
            if let previous = last, now - previous < 1 { return false }
            last = now
            return true
        }
        guard due else { return nil }
        try await reload()
        return verificationKey(kid: kid)
    }

    /// The published keys, serialized once per load.
    public var jwksJSON: [UInt8] { snapshot.withLock { $0.jwksJSON } }

    static func makeRecord(
        algorithm: JWSAlgorithm, sealer: KeySealer, clock: LatchClock, random: RandomSource
    ) throws -> SigningKeyRecord {
        let key = try PrivateKey.generate(algorithm)
        // A random kid, not the thumbprint: it says nothing about the key and never repeats.
        let keyID = random.token(byteCount: 12)
        return SigningKeyRecord(
            keyID: keyID, algorithm: algorithm,
            sealedPrivateKey: try sealer.seal(Data(key.pemRepresentation.utf8), keyID: keyID),
            publicKeyDER: key.publicKey.derRepresentation, createdAt: clock.seconds(), retiredAt: nil)
    }

    static func makeSnapshot(
        _ records: [SigningKeyRecord], algorithm: JWSAlgorithm, sealer: KeySealer, now: Int64, publicationAfterRetirement: Int64
    ) throws -> Snapshot {
        // Per algorithm, the newest unretired key signs.
        var signers: [JWSAlgorithm: JWSSigner] = [:]
        for record in records.filter({ $0.retiredAt == nil }).sorted(by: { $0.createdAt < $1.createdAt }) {
            let pem = try sealer.open(record.sealedPrivateKey, keyID: record.keyID)
            signers[record.algorithm] = JWSSigner(key: try PrivateKey(pem: String(decoding: pem, as: UTF8.self)), keyID: record.keyID)
        }
        // The deployment's algorithm; a store that has none of it (keys.algorithm changed) signs with its newest key
        // until the next rotation.
        let newest = records.filter({ $0.retiredAt == nil }).max(by: { $0.createdAt < $1.createdAt }).flatMap { signers[$0.algorithm] }
        guard let signer = signers[algorithm] ?? newest else { throw LatchError(.serverError, "no active signing key") }
        var verificationKeys: [String: PublicKey] = [:]
        var jwks: [JSONWebKey] = []
        for record in records.sorted(by: { $0.createdAt > $1.createdAt }) {
            if let retiredAt = record.retiredAt, retiredAt + publicationAfterRetirement < now { continue }
            let key = try PublicKey(der: record.publicKeyDER, algorithm: record.algorithm)
            verificationKeys[record.keyID] = key
            jwks.append(key.jwk(kid: record.keyID))
        }
        return Snapshot(
            signer: signer, signers: signers, verificationKeys: verificationKeys, jwksJSON: JSONWebKeySet.serialized(JSONWebKeySet(keys: jwks)))
    }
}

extension JSONWebKeySet {
    /// Compact JSON, members in a fixed order.
    static func serialized(_ set: JSONWebKeySet) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 512)
        writer.beginObject()
        writer.key("keys")
        writer.beginArray()
        for key in set.keys {
            writer.beginObject()
            writer.member("kty", key.kty)
            if let kid = key.kid { writer.member("kid", kid) }
            if let alg = key.alg { writer.member("alg", alg) }
            if let use = key.use { writer.member("use", use) }
            if let crv = key.crv { writer.member("crv", crv) }
            if let x = key.x { writer.member("x", x) }
            if let y = key.y { writer.member("y", y) }
            if let n = key.n { writer.member("n", n) }
            if let e = key.e { writer.member("e", e) }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }
}
