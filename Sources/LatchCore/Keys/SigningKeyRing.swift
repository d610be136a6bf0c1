import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Latch's own signing keys: the active signer, the public keys still published, and the JWKS.
///
/// Loaded from the store at start (a first key is generated when there is none) and reloaded periodically, so
/// a key rotated by another process or replica is picked up. A retired key stays published for
/// `publicationAfterRetirement` seconds — at least the longest lifetime of a token it signed, plus skew.
public final class SigningKeyRing: Sendable {
    /// What one load of the store yields; swapped atomically.
    struct Snapshot: Sendable {
        var signer: JWSSigner
        var verificationKeys: [String: PublicKey]
        var jwksJSON: [UInt8]
    }

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
        if !records.contains(where: { $0.retiredAt == nil }) {
            let record = try makeRecord(algorithm: algorithm, sealer: sealer, clock: clock, random: random)
            try await store.activateSigningKey(record)
            logger.info("generated a signing key", metadata: ["kid": "\(record.keyID)", "alg": "\(algorithm.rawValue)"])
            records = try await store.signingKeys()
        }
        let snapshot = try makeSnapshot(
            records, sealer: sealer, now: clock.seconds(), publicationAfterRetirement: publicationAfterRetirement)
        return SigningKeyRing(
            snapshot: snapshot, store: store, sealer: sealer, clock: clock, algorithm: algorithm,
            publicationAfterRetirement: publicationAfterRetirement, logger: logger)
    }

    /// Generates a new key, makes it the active one and retires the previous; returns its `kid`.
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

    /// Re-reads the store.
    public func reload() async throws {
        let records = try await store.signingKeys()
        let fresh = try Self.makeSnapshot(
            records, sealer: sealer, now: clock.seconds(), publicationAfterRetirement: publicationAfterRetirement)
        let previous = snapshot.withLock { current in
            let previous = current.signer.keyID
            current = fresh
            return previous
        }
        if previous != fresh.signer.keyID {
            logger.info("signing key changed", metadata: ["kid": "\(fresh.signer.keyID)"])
        }
    }

    /// The active signer.
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
        _ records: [SigningKeyRecord], sealer: KeySealer, now: Int64, publicationAfterRetirement: Int64
    ) throws -> Snapshot {
        // The newest unretired key signs.
        guard let active = records.filter({ $0.retiredAt == nil }).max(by: { $0.createdAt < $1.createdAt }) else {
            throw LatchError(.serverError, "no active signing key")
        }
        let pem = try sealer.open(active.sealedPrivateKey, keyID: active.keyID)
        let privateKey = try PrivateKey(pem: String(decoding: pem, as: UTF8.self))
        var verificationKeys: [String: PublicKey] = [:]
        var jwks: [JSONWebKey] = []
        for record in records.sorted(by: { $0.createdAt > $1.createdAt }) {
            if let retiredAt = record.retiredAt, retiredAt + publicationAfterRetirement < now { continue }
            let key = try PublicKey(der: record.publicKeyDER, algorithm: record.algorithm)
            verificationKeys[record.keyID] = key
            jwks.append(key.jwk(kid: record.keyID))
        }
        return Snapshot(
            signer: JWSSigner(key: privateKey, keyID: active.keyID), verificationKeys: verificationKeys,
            jwksJSON: JSONWebKeySet.serialized(JSONWebKeySet(keys: jwks)))
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
