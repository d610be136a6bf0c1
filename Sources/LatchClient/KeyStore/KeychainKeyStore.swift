import Foundation

/// The four Keychain calls a ``KeychainKeyStore`` makes, on generic-password items addressed by service and account:
/// the platform call behind a protocol, so the store's rules (namespaces, replacement, error mapping) are tested on
/// Linux with a fake, and ``SecurityKeychain`` is all that talks to Security.framework.
public protocol KeychainItems: Sendable {
    /// The data of the item (`service`, `account`); nil when there is none. Throws ``KeychainStatus`` on failure.
    func data(service: String, account: String) throws(KeychainStatus) -> Data?
    /// Adds the item; ``KeychainStatus/duplicateItem`` when it exists.
    func add(_ data: Data, service: String, account: String) throws(KeychainStatus)
    /// Replaces the data of an existing item; ``KeychainStatus/itemNotFound`` when there is none.
    func update(_ data: Data, service: String, account: String) throws(KeychainStatus)
    /// Deletes the item, or every item of `service` when `account` is nil. No item is not an error.
    func delete(service: String, account: String?) throws(KeychainStatus)
}

/// A Security framework result code (`OSStatus`) other than success, with the ones the SDK decides on named.
public struct KeychainStatus: Error, Hashable, Sendable {
    /// The `OSStatus`.
    public let rawValue: Int32
    /// The status `rawValue` (an `OSStatus` other than `errSecSuccess`).
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// `errSecItemNotFound`.
    public static let itemNotFound = KeychainStatus(-25300)
    /// `errSecDuplicateItem`.
    public static let duplicateItem = KeychainStatus(-25299)
    /// `errSecInteractionNotAllowed`: the item's protection class is not available yet (before the first unlock).
    public static let interactionNotAllowed = KeychainStatus(-25308)
    /// `errSecMissingEntitlement`: the access group is not in the app's `keychain-access-groups`.
    public static let missingEntitlement = KeychainStatus(-34018)
    /// `errSecNotAvailable`: no Keychain (some test hosts).
    public static let notAvailable = KeychainStatus(-25291)

    /// The SDK error for this status, naming `operation`.
    public func userClientError(_ operation: String) -> UserClientError {
        switch self {
        case .interactionNotAllowed:
            .platform(.keychainLocked, "the Keychain cannot be \(operation) before the device is first unlocked", osStatus: rawValue)
        case .missingEntitlement:
            .platform(
                .missingEntitlement, "the Keychain access group is not among the app's keychain-access-groups entitlement",
                osStatus: rawValue)
        default: .platform(.keychainFailure, "the Keychain cannot be \(operation) (OSStatus \(rawValue))", osStatus: rawValue)
        }
    }
}

/// Keys and tokens in the Keychain: one generic-password item per name, service `latch.<namespace>`, so two clients
/// (or two apps sharing an access group) never see each other's items and ``removeAll()`` clears one namespace only.
///
/// On Apple platforms this is the SDK's default store (``KeychainKeyStore/init(namespace:accessibility:accessGroup:)``):
/// items are `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly` unless you choose otherwise, never synchronised to
/// iCloud Keychain, and never in a backup that another device could restore (the device-only classes). Every failure
/// is a ``UserClientError`` with a stable code — ``UserClientError/Code/keychainLocked`` before the first unlock,
/// ``UserClientError/Code/missingEntitlement`` for an access group the app may not use — and a failed write leaves
/// the previous value in place.
public struct KeychainKeyStore: KeyStore {
    /// The Keychain service of this namespace's items.
    public let service: String
    let items: any KeychainItems

    /// A store for `namespace` over `items` (tests pass a fake; apps use the Security framework initialiser).
    public init(namespace: String, items: any KeychainItems) throws(UserClientError) {
        guard !namespace.isEmpty, namespace.count <= 64,
            namespace.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) })
        else { throw .invalidConfiguration("the key-store namespace must be 1–64 letters, digits, '-', '_' or '.'") }
        self.service = "latch.\(namespace)"
        self.items = items
    }

    public func value(for name: String) throws -> Data? {
        do {
            return try items.data(service: service, account: name)
        } catch {
            throw error.userClientError("read")
        }
    }

    public func set(_ value: Data, for name: String) throws {
        // Update first: the item keeps its attributes and there is never a moment without it. Add when it is new.
        do {
            try items.update(value, service: service, account: name)
        } catch .itemNotFound {
            do {
                try items.add(value, service: service, account: name)
            } catch {
                throw error.userClientError("written")
            }
        } catch {
            throw error.userClientError("written")
        }
    }

    public func remove(_ name: String) throws {
        do {
            try items.delete(service: service, account: name)
        } catch {
            throw error.userClientError("written")
        }
    }

    public func removeAll() throws {
        do {
            try items.delete(service: service, account: nil)
        } catch {
            throw error.userClientError("written")
        }
    }
}

/// Moves what an earlier SDK version kept in a ``FileKeyStore`` into another store (the Keychain), once.
public enum KeyStoreMigration {
    /// Copies every item of `source` that `destination` does not hold yet, then deletes `source`'s items. Returns the
    /// names moved. Safe to call on every launch: a store already moved (or never written) moves nothing, and a
    /// migration interrupted half-way finishes on the next call — an item the destination holds already is kept
    /// (the newer value), the file copy dropped. Nothing is deleted from `source` unless every copy succeeded.
    @discardableResult
    public static func migrate(from source: FileKeyStore, to destination: any KeyStore) throws(UserClientError) -> [String] {
        let names: [String]
        do {
            names = try source.itemNames()
        } catch {
            throw .invalidConfiguration("the old key store at \(source.directory.path) cannot be listed: \(error)")
        }
        var moved: [String] = []
        for name in names {
            do {
                guard try destination.value(for: name) == nil, let value = try source.value(for: name) else { continue }
                try destination.set(value, for: name)
                moved.append(name)
            } catch {
                throw UserClient.keyStoreError(error, "the key store cannot be migrated")
            }
        }
        do {
            try source.removeAll()
            try? FileManager.default.removeItem(at: source.directory)
        } catch {
            throw .invalidConfiguration("the old key store at \(source.directory.path) cannot be removed: \(error)")
        }
        return moved
    }
}

#if canImport(Security) && !os(Linux)
import Security

/// The Keychain of Security.framework: generic-password items, not synchronised (`kSecAttrSynchronizable` false),
/// with the store's protection class and access group.
public struct SecurityKeychain: KeychainItems {
    /// When items can be read: a `kSecAttrAccessible…` class.
    public struct Accessibility: Sendable, Hashable {
        let rawValue: String
        /// After the first unlock since the device started, on this device only (never in another device's restore).
        /// The default: background refreshes work, and nothing leaves the device.
        public static let afterFirstUnlockThisDeviceOnly = Accessibility(rawValue: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        /// Only while the device is unlocked, this device only.
        public static let whenUnlockedThisDeviceOnly = Accessibility(rawValue: kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
        /// Only while a passcode is set and the device is unlocked; items vanish when the passcode is removed.
        public static let whenPasscodeSetThisDeviceOnly = Accessibility(rawValue: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String)
        /// After the first unlock; may be restored onto another device from an encrypted backup (the SDK then finds
        /// the Secure Enclave keys unusable and reports ``UserClientError/Code/deviceKeyLost``).
        public static let afterFirstUnlock = Accessibility(rawValue: kSecAttrAccessibleAfterFirstUnlock as String)
    }

    let accessibility: Accessibility
    let accessGroup: String?

    /// - Parameters:
    ///   - accessibility: the protection class of new items.
    ///   - accessGroup: a Keychain access group shared with app extensions (in the app's `keychain-access-groups`).
    public init(accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil) {
        self.accessibility = accessibility
        self.accessGroup = accessGroup
    }

    func query(service: String, account: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrSynchronizable as String: kCFBooleanFalse as Any, kSecUseDataProtectionKeychain as String: true,
        ]
        if let account { query[kSecAttrAccount as String] = account }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func data(service: String, account: String) throws(KeychainStatus) -> Data? {
        var query = query(service: service, account: account)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw KeychainStatus(status) }
        return result as? Data
    }

    public func add(_ data: Data, service: String, account: String) throws(KeychainStatus) {
        var query = query(service: service, account: account)
        query[kSecValueData as String] = data
        query[kSecAttrAccessible as String] = accessibility.rawValue
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainStatus(status) }
    }

    public func update(_ data: Data, service: String, account: String) throws(KeychainStatus) {
        let attributes: [String: Any] = [kSecValueData as String: data, kSecAttrAccessible as String: accessibility.rawValue]
        let status = SecItemUpdate(query(service: service, account: account) as CFDictionary, attributes as CFDictionary)
        guard status == errSecSuccess else { throw KeychainStatus(status) }
    }

    public func delete(service: String, account: String?) throws(KeychainStatus) {
        let status = SecItemDelete(query(service: service, account: account) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainStatus(status) }
    }
}

extension KeychainKeyStore {
    /// The Keychain store of `namespace` (the client configuration's `namespace`).
    /// - Parameters:
    ///   - accessibility: when items can be read; by default after the first unlock, on this device only.
    ///   - accessGroup: a Keychain access group to share the items with app extensions.
    public init(
        namespace: String, accessibility: SecurityKeychain.Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil
    ) throws(UserClientError) {
        try self.init(namespace: namespace, items: SecurityKeychain(accessibility: accessibility, accessGroup: accessGroup))
    }
}
#endif
