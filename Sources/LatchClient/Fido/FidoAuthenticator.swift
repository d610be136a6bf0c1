import Crypto
import CryptoExtras
import Foundation
import LatchJOSE
import LatchModel

/// A FIDO authenticator on this device: it makes a P-256 credential key and signs with it after verifying the
/// user its own way (a PIN, biometrics, a software check). The SDK wraps its keys and signatures in WebAuthn
/// Level 3 JSON (``WebAuthnMessages``); the server tells the models apart by AAGUID (``LatchAuthenticatorModel``).
public protocol FidoAuthenticator: Sendable {
    /// The model this authenticator is (its AAGUID), for the server's policy and `amr`.
    var model: LatchAuthenticatorModel { get }
    /// Whether it can work on this device now (hardware present, biometrics enrolled).
    var isSupported: Bool { get }
    /// A new credential key. `material` is what the device keeps to use it again — never the PIN, and for a PIN
    /// authenticator nothing from which a guess could be checked offline.
    func createKey(pin: String?) async throws(UserClientError) -> FidoKey
    /// Verifies the user and signs `message` (DER ECDSA) with the key `material` restores.
    func sign(_ message: [UInt8], material: Data, pin: String?) async throws(UserClientError) -> Data
}

/// A credential key as the device keeps it.
public struct FidoKey: Sendable {
    /// The credential's public key (ES256).
    public var publicKey: PublicKey
    /// What restores the private key (a salt, a Secure Enclave blob, a software key).
    public var material: Data

    /// A credential key from its P-256 public key and what restores its private key.
    public init(publicKey: P256.Signing.PublicKey, material: Data) {
        self.publicKey = PublicKey(p256: publicKey)
        self.material = material
    }
}

/// A PIN authenticator: the private key is derived from the PIN and a random salt with scrypt (memory-hard), so the
/// device keeps only the salt. A wrong PIN derives another key, whose signature the server refuses and counts: the
/// device holds no verifier, and a stolen device yields no offline check of guesses — every guess is an online
/// attempt the server counts toward the lockout.
public struct PinAuthenticator: FidoAuthenticator {
    public var model: LatchAuthenticatorModel { .pin }
    public var isSupported: Bool { true }
    /// scrypt cost: N = 2^15, r = 8, p = 1 (32 MiB, about 0.1 s on a phone).
    let rounds: Int

    public init() { self.rounds = 1 << 15 }

    /// A cheaper cost for tests (N = 2^10).
    public static func forTests() -> PinAuthenticator { PinAuthenticator(rounds: 1 << 10) }

    init(rounds: Int) { self.rounds = rounds }

    public func createKey(pin: String?) async throws(UserClientError) -> FidoKey {
        guard let pin else { throw .invalidInput("a PIN authenticator needs the PIN") }
        var salt = [UInt8](repeating: 0, count: 16)
        for index in salt.indices { salt[index] = UInt8.random(in: 0...255) }
        let key = try derive(pin: pin, salt: salt)
        return FidoKey(publicKey: key.publicKey, material: Data(salt))
    }

    public func sign(_ message: [UInt8], material: Data, pin: String?) async throws(UserClientError) -> Data {
        guard let pin else { throw .invalidInput("a PIN authenticator needs the PIN") }
        guard material.count == 16 else { throw .invalidInput("this PIN authenticator's stored salt is damaged") }
        let key = try derive(pin: pin, salt: Array(material))
        do {
            return try key.signature(for: message).derRepresentation
        } catch {
            throw .invalidInput("signing failed: \(error)")
        }
    }

    /// scrypt(PIN, salt) → 32 bytes → a P-256 scalar (rehashed in the rare case the bytes are not one).
    func derive(pin: String, salt: [UInt8]) throws(UserClientError) -> P256.Signing.PrivateKey {
        let seed: SymmetricKey
        do {
            seed = try KDF.Scrypt.deriveKey(from: Array(pin.utf8), salt: salt, outputByteCount: 32, rounds: rounds, blockSize: 8, parallelism: 1)
        } catch {
            throw .invalidInput("the PIN key could not be derived: \(error)")
        }
        var candidate = seed.withUnsafeBytes { Array($0) }
        for round in 0..<8 {
            if let key = try? P256.Signing.PrivateKey(rawRepresentation: candidate) { return key }
            candidate = Array(SHA256.hash(data: candidate + [UInt8(round)]))
        }
        throw .invalidInput("the PIN key could not be derived")
    }
}

/// Verifies that the device's user is present and consents, before a biometric or software key signs.
public protocol UserVerifier: Sendable {
    /// Throws ``UserClientError/notAuthorized`` when the user declines or fails.
    func verifyUser(reason: String) async throws(UserClientError)
}

/// A software verifier (Linux, development, tests): asks `approve`.
public struct SoftwareUserVerifier: UserVerifier {
    let approve: @Sendable (String) async -> Bool

    public init(approve: @escaping @Sendable (String) async -> Bool = { _ in true }) { self.approve = approve }

    public func verifyUser(reason: String) async throws(UserClientError) {
        guard await approve(reason) else { throw .notAuthorized }
    }
}

/// A software key behind a ``UserVerifier``: the key lives in the client's key store (on Linux a file), so it suits
/// development and tests; apps on Apple platforms use ``SecureEnclaveAuthenticator``.
public struct SoftwareAuthenticator: FidoAuthenticator {
    public var model: LatchAuthenticatorModel { .software }
    public var isSupported: Bool { true }
    let verifier: any UserVerifier

    public init(verifier: any UserVerifier = SoftwareUserVerifier()) { self.verifier = verifier }

    public func createKey(pin: String?) async throws(UserClientError) -> FidoKey {
        let key = P256.Signing.PrivateKey()
        return FidoKey(publicKey: key.publicKey, material: key.rawRepresentation)
    }

    public func sign(_ message: [UInt8], material: Data, pin: String?) async throws(UserClientError) -> Data {
        try await verifier.verifyUser(reason: "sign in")
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: material) else { throw .invalidInput("the stored key is damaged") }
        do {
            return try key.signature(for: message).derRepresentation
        } catch {
            throw .invalidInput("signing failed: \(error)")
        }
    }
}

/// Picks the authenticator to enrol: the first of `available` (in the app's order of preference) that the device
/// supports and the server's policy accepts.
public struct AuthenticatorSelector: Sendable {
    public let policy: FidoPolicy

    public init(policy: FidoPolicy) { self.policy = policy }

    /// Whether the policy accepts `model`.
    public func allows(_ model: LatchAuthenticatorModel) -> Bool {
        !policy.deniedAaguids.contains(model.rawValue) && (policy.allowedAaguids.isEmpty || policy.allowedAaguids.contains(model.rawValue))
    }

    /// The chosen authenticator's AAGUID and the authenticator, or nil when none fits.
    public func select(from available: [any FidoAuthenticator]) -> (aaguid: String, authenticator: any FidoAuthenticator)? {
        available.first { $0.isSupported && allows($0.model) }.map { ($0.model.rawValue, $0) }
    }
}

/// Checks a new PIN against the server's policy before enrolment; a refusal is recoverable — ask the user again.
public struct PinEnroller: Sendable {
    public let policy: FidoPolicy.Pin

    public init(policy: FidoPolicy.Pin) { self.policy = policy }

    /// Why a PIN was refused; the user can try another.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case tooShort(minimum: Int)
        case tooLong(maximum: Int)
        case notDigits
        case tooSimple

        public var description: String {
            switch self {
            case .tooShort(let minimum): "the PIN needs at least \(minimum) digits"
            case .tooLong(let maximum): "the PIN may have at most \(maximum) digits"
            case .notDigits: "the PIN must be digits only"
            case .tooSimple: "the PIN must not be one repeated digit or a run like 123456"
            }
        }
    }

    /// Accepts a PIN of ASCII digits within the policy's lengths that is not one repeated digit or a straight run.
    public func validate(_ pin: String) throws(Refusal) {
        guard pin.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { throw .notDigits }
        guard pin.utf8.count >= policy.minLength else { throw .tooShort(minimum: policy.minLength) }
        guard pin.utf8.count <= policy.maxLength else { throw .tooLong(maximum: policy.maxLength) }
        let digits = pin.utf8.map { Int($0) - 0x30 }
        let steps = Set(zip(digits, digits.dropFirst()).map { ($1 - $0 + 10) % 10 })
        guard ![[0], [1], [9]].contains(steps) else { throw .tooSimple }
    }
}
