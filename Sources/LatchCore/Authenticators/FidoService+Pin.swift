import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

extension FidoService {
    // MARK: PIN change

    /// `POST /v1/fido/pin-change/options {authenticatorId}` for the signed-in `user`: one challenge for both halves
    /// of the change (an assertion with the old PIN's key, a registration of the new one under the same credential
    /// id).
    public func pinChangeOptions(for user: User, authenticatorID: String) async throws -> JSONValue {
        let authenticator = try await pinAuthenticator(authenticatorID, of: user)
        try settings.pin.admit(authenticator, now: clock.seconds(), code: .pinAttemptFailed)
        let (id, challenge) = ceremonies.begin(.pinChange, userID: user.id, random: random, now: clock.seconds())
        return requestOptions(ceremonyID: id, challenge: challenge, allow: [authenticator], userVerification: .required)
    }

    /// `POST /v1/fido/pin-change {ceremonyId, authenticatorId, assertion, credential}`: the old PIN proven (a failure
    /// counts toward the lockout like a sign-in's), the new key registered under the same credential id, the old key
    /// retired — one compare-and-set on the stored key, with the ceremony consumed in the same unit.
    public func changePin(
        for user: User, ceremonyID: String, authenticatorID: String, assertion: JSONValue, credential: JSONValue
    ) async throws -> FidoAuthenticatorInfo {
        let now = clock.seconds()
        let ceremony = try ceremonies.checkRequest(ceremonyID, .pinChange, now: now)
        guard ceremony.userID == user.id else { throw LatchError.invalidInput("this ceremony was started by another user") }
        let authenticator = try await pinAuthenticator(authenticatorID, of: user)
        // The old PIN: an assertion by the stored key (§7.2, the policy and the PIN gate as at sign-in; a wrong PIN
        // is counted, `pin_attempt_failed`).
        guard Self.bytes(assertion["rawId"] ?? assertion["id"]) == Array(authenticator.credentialID) else {
            throw LatchError.invalidInput("assertion must be an AuthenticationResponseJSON of this authenticator's credential")
        }
        let checked = try await checkAssertion(assertion, ceremony: ceremony, now: now, code: nil)
        do {
            return try await replaceKey(of: authenticator, user: user, ceremony: ceremony, credential: credential, now: now)
        } catch {
            // The old PIN was right: its reserved attempt goes back whatever refused the new key, as after a sign-in
            // refused for another reason — a right PIN never counts toward the lockout.
            await releaseVerifiedPinAttempt(checked)
            throw error
        }
    }

    /// The new PIN: a registration of `authenticator`'s credential id with a new key, which replaces the old one.
    private func replaceKey(
        of authenticator: Authenticator, user: User, ceremony: FidoCeremonies.Ceremony, credential: JSONValue, now: Int64
    ) async throws -> FidoAuthenticatorInfo {
        let verified = try await relyingParty().verifyRegistrationResponse(credential, challenge: ceremony.challenge, now: now, context: "credential ")
        guard verified.credentialID == Array(authenticator.credentialID), verified.aaguid == Array(authenticator.aaguid) else {
            throw LatchError.invalidInput("the new key must be registered under the same credential id and authenticator model")
        }
        guard verified.publicKeyCOSE != Array(authenticator.publicKeyCOSE) else {
            throw LatchError.invalidInput("the new PIN must give a new key")
        }
        let event = SecurityEvent.now(.authenticatorPinChanged, actor: "user", userID: user.id, detail: authenticator.id, clock: clock, random: random)
        do {
            try await store.write { transaction in
                transaction.consume(ceremony.consumes, ifUnavailable: Refusal.missing)
                transaction.replaceAuthenticatorKey(
                    id: authenticator.id, oldPublicKeyCOSE: authenticator.publicKeyCOSE, publicKeyCOSE: Data(verified.publicKeyCOSE),
                    signCount: verified.signCount, at: now, ifChanged: Refusal.counter)
                transaction.record(event)
            }
        } catch Refusal.missing {
            throw LatchError.invalidInput("this ceremony was completed before; start again")
        } catch Refusal.counter {
            throw LatchError(.conflict, "the PIN was changed concurrently; start again")
        }
        var changed = authenticator
        changed.publicKeyCOSE = Data(verified.publicKeyCOSE)
        changed.failedAttempts = 0
        changed.lastFailedAt = nil
        return info(changed)
    }

    /// One of `user`'s authenticators that is a PIN authenticator.
    func pinAuthenticator(_ id: String, of user: User) async throws -> Authenticator {
        guard let authenticator = try await store.authenticators(userID: user.id).first(where: { $0.id == id }) else {
            throw LatchError.notFound("no such authenticator")
        }
        guard LatchAuthenticatorModel.of(authenticator) == .pin else { throw LatchError.invalidInput("this authenticator has no PIN") }
        return authenticator
    }

    // MARK: Admin

    /// `GET /admin/v1/users/{id}/authenticators`.
    public func adminList(userID: String) async throws -> FidoAuthenticatorList {
        guard let user = try await store.user(id: userID) else { throw LatchError.notFound("no such user") }
        return try await list(for: user)
    }

    /// `POST /admin/v1/users/{id}/authenticators/{authenticatorId}/unlock`: the failure count back to 0.
    public func unlock(userID: String, authenticatorID: String) async throws -> FidoAuthenticatorInfo {
        let event = SecurityEvent.now(.authenticatorUnlocked, actor: "admin", userID: userID, detail: authenticatorID, clock: clock, random: random)
        guard try await store.succeeds({ transaction, refusal in
            transaction.unlockAuthenticator(id: authenticatorID, userID: userID, ifMissing: refusal)
            transaction.record(event)
        }), let unlocked = try await store.authenticators(userID: userID).first(where: { $0.id == authenticatorID })
        else { throw LatchError.notFound("this user has no such authenticator") }
        return info(unlocked)
    }

    /// `DELETE /admin/v1/users/{id}/authenticators/{authenticatorId}` (and without the id: all of them).
    public func adminDelete(userID: String, authenticatorID: String?) async throws {
        guard let user = try await store.user(id: userID) else { throw LatchError.notFound("no such user") }
        guard let authenticatorID else { return try await deleteAll(for: user, actor: "admin") }
        try await delete(authenticatorID, for: user, actor: "admin")
    }
}
