import Foundation
import LatchJOSE
import LatchModel

/// A signing key as the console lists it.
public struct SigningKeySummary: Sendable, Hashable {
    public var keyID: String
    public var algorithm: String
    public var createdAt: Int64
    /// When a newer key took over; nil for the active key.
    public var retiredAt: Int64?
}

extension AdminService {
    /// Every stored signing key, newest first: the active one and those still published for tokens they signed.
    public func signingKeys() async throws -> [SigningKeySummary] {
        try await store.signingKeys().sorted { $0.createdAt > $1.createdAt }.map {
            SigningKeySummary(keyID: $0.keyID, algorithm: $0.algorithm.rawValue, createdAt: $0.createdAt, retiredAt: $0.retiredAt)
        }
    }

    /// The user whose id or username is `text`, if any (a console search).
    public func findUser(_ text: String) async throws -> AdminUser? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 256 else { return nil }
        if let user = try await store.user(id: text) { return Self.view(user) }
        if let name = try? Usernames.native(text), let user = try await store.user(username: name) { return Self.view(user) }
        return nil
    }
}
