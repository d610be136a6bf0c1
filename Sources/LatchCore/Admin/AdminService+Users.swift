import LatchModel
import Logging

extension AdminService {
    public func user(id: String) async throws -> AdminUser {
        guard let user = try await store.user(id: id) else { throw LatchError.notFound("no such user") }
        return Self.view(user)
    }

    public func users(after cursor: String?, limit: Int) async throws -> AdminUserPage {
        guard (1...500).contains(limit) else { throw LatchError.invalidInput("limit must be 1–500") }
        let page = try await store.users(after: cursor, limit: limit + 1)
        let users = page.prefix(limit).map(Self.view)
        return AdminUserPage(users: Array(users), nextCursor: page.count > limit ? users.last?.id : nil)
    }

    public func deleteUser(id: String) async throws {
        let event = SecurityEvent.now(.userDeleted, actor: "admin", userID: id, clock: clock, random: random)
        guard try await store.deleteUser(id: id, recording: event) else { throw LatchError.notFound("no such user") }
        logger.info("user deleted by admin", metadata: ["user": "\(id)"])
    }

    public func revokeSessions(userID: String) async throws -> SessionsRevoked {
        guard try await store.user(id: userID) != nil else { throw LatchError.notFound("no such user") }
        let event = SecurityEvent.now(.sessionsRevoked, actor: "admin", userID: userID, clock: clock, random: random)
        return SessionsRevoked(revoked: try await store.revokeSessions(userID: userID, at: clock.seconds(), recording: event))
    }

    static func view(_ user: User) -> AdminUser {
        AdminUser(
            id: user.id, username: user.username, kind: user.kind.rawValue, issuer: user.issuer, subject: user.subject,
            claims: user.claims, createdAt: user.createdAt)
    }
}
