import Foundation
import LatchModel

/// Where the SDK keeps the device key and tokens, under the client's namespace.
///
/// Implementations: ``KeychainKeyStore`` (Apple platforms: the Keychain), ``FileKeyStore`` (Linux, command line),
/// ``InMemoryKeyStore`` (tests). Errors thrown are ``UserClientError``s where the store can say what went wrong.
public protocol KeyStore: Sendable {
    /// The value stored under `name`, if any.
    func value(for name: String) throws -> Data?
    /// Stores `value` under `name`, replacing any previous one, atomically.
    func set(_ value: Data, for name: String) throws
    /// Removes `name`.
    func remove(_ name: String) throws
    /// Removes everything of this namespace — and nothing of any other.
    func removeAll() throws
}

/// A key store in memory, for tests.
public final class InMemoryKeyStore: KeyStore {
    private let items = Locked<[String: Data]>([:])

    public init() {}

    public func value(for name: String) throws -> Data? { items.withLock { $0[name] } }
    public func set(_ value: Data, for name: String) throws { items.withLock { $0[name] = value } }
    public func remove(_ name: String) throws { _ = items.withLock { $0.removeValue(forKey: name) } }
    public func removeAll() throws { items.withLock { $0.removeAll() } }
}
