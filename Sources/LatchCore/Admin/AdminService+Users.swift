import LatchJOSE
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

    /// `GET /admin/v1/users/{id}/sessions`: the user's live sessions, newest first (at most 100).
    public func sessions(userID: String) async throws -> AdminUserSessionList {
        guard try await store.user(id: userID) != nil else { throw LatchError.notFound("no such user") }
        return AdminUserSessionList(
            sessions: try await store.activeSessions(userID: userID, now: clock.seconds(), limit: 100).map {
                AdminUserSessionList.Session(
                    id: $0.id, clientId: $0.clientID, authTime: $0.authTime, amr: $0.amr, scope: $0.scope, createdAt: $0.createdAt,
                    expiresAt: $0.expiresAt, dpopBound: $0.dpopJKT != nil)
            })
    }

    /// `DELETE /admin/v1/users/{id}/sessions/{sessionId}`: ends one session of the user (its refresh token stops
    /// working; its access tokens at their expiry), recorded in the same unit.
    public func revokeSession(userID: String, sessionID: String) async throws {
        let now = clock.seconds()
        guard let session = try await store.session(id: sessionID), session.userID == userID, session.isActive(at: now) else {
            throw LatchError.notFound("the user has no such live session")
        }
        let event = change("sessions", "revoke", "session \(sessionID) client \(session.clientID)", user: userID)
        let revoked = try await store.count { transaction in
            let count = transaction.revokeSession(id: sessionID, at: now)
            transaction.record(event)
            return count
        }
        guard revoked == 1 else { throw LatchError.notFound("the user has no such live session") }
    }

    /// `GET /admin/v1/users/{id}/devices`: the user's device sign-in keys.
    public func devices(userID: String) async throws -> AdminUserDeviceList {
        guard try await store.user(id: userID) != nil else { throw LatchError.notFound("no such user") }
        return AdminUserDeviceList(
            devices: try await store.deviceKeys(userID: userID).map {
                AdminUserDeviceList.Device(
                    keyId: $0.keyID, algorithm: $0.key.algorithm.rawValue, attestation: $0.attestation?.type, signCount: $0.attestation?.signCount,
                    createdAt: $0.createdAt)
            })
    }

    static func view(_ user: User) -> AdminUser {
        AdminUser(
            id: user.id, username: user.username, kind: user.kind.rawValue, issuer: user.issuer, subject: user.subject,
            claims: user.claims, createdAt: user.createdAt)
    }
}
