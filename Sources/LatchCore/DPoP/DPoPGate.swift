import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// DPoP settings of the deployment (RFC 9449).
public struct DPoPSettings: Sendable {
    /// Require the server's nonce in every proof (`dpop.requireNonce`, §8): a proof without a current one is answered
    /// `use_dpop_nonce` with a `DPoP-Nonce` header, which the client puts into a new proof.
    public var requireNonce = false
    /// How long a nonce stays good, seconds: the window it was made in and the next.
    public var nonceLifetime: Int64 = 300
    /// How old (by `iat`) a proof may be, and how far ahead of Latch's clock, seconds.
    public var maximumAge: Int64 = 60
    public var futureSkew: Int64 = 60

    public init(requireNonce: Bool = false) { self.requireNonce = requireNonce }
}

/// An app's DPoP policy (`PATCH /admin/v1/clients/{id} {dpop, dpopAttested}`).
public struct DPoPPolicy: Codable, Sendable, Hashable {
    public enum Mode: String, Codable, Sendable, CaseIterable {
        /// The `DPoP` header is ignored: bearer tokens only.
        case off
        /// Tokens are bound when the request carries a proof (the default).
        case allowed
        /// Every token request must carry a proof.
        case required
    }

    public var mode: Mode
    /// The proof key must be the user's registered device sign-in key (so the tokens are bound to the key that
    /// attestation, or an admin's test key, vouched for).
    public var attested: Bool

    public init(mode: Mode = .allowed, attested: Bool = false) {
        self.mode = mode
        self.attested = attested
    }

    public static let `default` = DPoPPolicy()
}

/// The server's DPoP nonces (RFC 9449 §8): stateless — the time window they were made in and a MAC of it — so every
/// replica issues and accepts the same ones without sharing state. Good in their window and the next.
public struct DPoPNonces: Sendable {
    let key: SymmetricKey
    let lifetime: Int64
    let clock: LatchClock

    public init(key: SymmetricKey, lifetime: Int64, clock: LatchClock) {
        self.key = key
        self.lifetime = max(1, lifetime)
        self.clock = clock
    }

    /// The nonce to hand out now.
    public func current() -> String { nonce(window: clock.seconds() / lifetime) }

    func nonce(window: Int64) -> String {
        let bytes = (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(bitPattern: window) >> (8 * UInt64($0))) }
        let mac = HMAC<SHA256>.authenticationCode(for: bytes, using: key)
        return Base64URL.encode(bytes + Array(mac).prefix(16))
    }

    /// Whether `text` is a nonce of this window or the one before.
    public func isValid(_ text: String) -> Bool {
        guard text.utf8.count == 32, let bytes = Base64URL.decode(text), bytes.count == 24 else { return false }
        let window = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let now = clock.seconds() / lifetime
        guard window == now || window == now - 1 else { return false }
        return Secrets.constantTimeEquals(Data(nonce(window: window).utf8), Data(text.utf8))
    }
}

/// Checks DPoP proofs for Latch's token endpoint and its own resource endpoints, and spends their `jti`s in the
/// store (shared by every replica; kept until the proof would be too old anyway, then purged).
public struct DPoPGate: Sendable {
    let store: any UnitOfWork
    public let settings: DPoPSettings
    public let nonces: DPoPNonces
    /// Latch's public base URL: `htu` is checked against it and the request's path.
    let issuer: String
    let clock: LatchClock

    public init(store: any UnitOfWork, settings: DPoPSettings, nonces: DPoPNonces, issuer: String, clock: LatchClock) {
        self.store = store
        self.settings = settings
        self.nonces = nonces
        self.issuer = issuer
        self.clock = clock
    }

    /// At the token endpoint: the proof in `headers` (every `DPoP` header value) under the client's policy; nil when
    /// the tokens are to be bearer tokens (no proof, or DPoP off for the client). The proof's `jti` is spent.
    public func tokenEndpoint(headers: [String], policy: DPoPPolicy, spend: Bool = true) async throws -> DPoP.Proof? {
        guard policy.mode != .off else { return nil }
        guard !headers.isEmpty else {
            guard policy.mode != .required else {
                throw LatchError(.invalidDPoPProof, "this client must prove possession of a key: send a DPoP proof (RFC 9449)")
            }
            return nil
        }
        let proof = try check(headers, method: "POST", path: "/oauth2/token", accessToken: nil, atResource: false)
        if spend { try await self.spend(proof, atResource: false) }
        return proof
    }

    /// At one of Latch's resource endpoints: the proof for `method` `path` over `accessToken` (`ath`), spent.
    public func resource(headers: [String], method: String, path: String, accessToken: String) async throws -> DPoP.Proof {
        guard !headers.isEmpty else { throw LatchError(.invalidDPoPProof, "a DPoP-bound token needs a DPoP proof", atResource: true) }
        let proof = try check(headers, method: method, path: path, accessToken: accessToken, atResource: true)
        try await spend(proof, atResource: true)
        return proof
    }

    func check(_ headers: [String], method: String, path: String, accessToken: String?, atResource: Bool) throws(LatchError) -> DPoP.Proof {
        guard headers.count == 1 else { throw LatchError(.invalidDPoPProof, "send exactly one DPoP header", atResource: atResource) }
        var expected = DPoP.Expectations(method: method, url: issuer + path, accessToken: accessToken, now: clock.seconds())
        expected.maximumAge = settings.maximumAge
        expected.futureSkew = settings.futureSkew
        let nonces = nonces
        expected.nonce = DPoP.NonceRule(required: settings.requireNonce, isValid: { nonces.isValid($0) })
        do {
            return try DPoP.verify(headers[0], expected)
        } catch {
            switch error.code {
            case .invalidProof:
                throw LatchError(.invalidDPoPProof, error.message, atResource: atResource)
            case .useNonce:
                throw LatchError(.useDPoPNonce, error.message, headers: [DPoP.nonceHeaderName: nonces.current()], atResource: atResource)
            }
        }
    }

    private struct Replayed: Error {}

    /// The single-use value a proof's `jti` is: one per key.
    public static func spending(_ proof: DPoP.Proof) -> SingleUse {
        .jti(proof.jti, issuer: "dpop:" + proof.thumbprint, until: proof.rememberUntil)
    }

    func spend(_ proof: DPoP.Proof, atResource: Bool) async throws {
        let value = Self.spending(proof)
        do {
            try await store.write { $0.consume(value, ifUnavailable: Replayed()) }
        } catch is Replayed {
            throw LatchError(.invalidDPoPProof, "this DPoP proof was used before (its jti)", atResource: atResource)
        }
    }
}
