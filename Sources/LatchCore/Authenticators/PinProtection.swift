import Foundation
import LatchModel
import Logging

/// The server side of PIN authenticators (``LatchAuthenticatorModel/pin``): the SDK derives the credential's private
/// key from the PIN, so a wrong PIN is a signature that does not verify, and the server — not the device — counts
/// the failures: a cool-down that grows with each, then a lockout only an admin lifts.
public struct PinPolicy: Sendable, Hashable {
    /// PIN length the SDK's enroller enforces (the server never sees the PIN).
    public var minLength = 6
    public var maxLength = 6
    /// Wrong PINs before the lockout.
    public var maxAttempts = 5
    /// Seconds to wait after the 1st, 2nd, … wrong PIN; the last entry repeats.
    public var coolDowns: [Int64] = [0, 10, 30, 60]

    public init() {}

    /// The status of `authenticator` at `now`; nil when it is not a PIN authenticator.
    public func status(of authenticator: Authenticator, now: Int64) -> FidoPinStatus? {
        guard LatchAuthenticatorModel.of(authenticator) == .pin else { return nil }
        let failures = authenticator.failedAttempts
        if failures >= maxAttempts { return FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0) }
        if failures == 0 { return FidoPinStatus(state: FidoPinStatus.unlocked, remainingTries: maxAttempts, coolDown: 0) }
        let wait = coolDowns.isEmpty ? 0 : coolDowns[min(failures - 1, coolDowns.count - 1)]
        let until = (authenticator.lastFailedAt ?? now).adding(seconds: wait)
        return FidoPinStatus(state: FidoPinStatus.lastAttemptFailed, remainingTries: maxAttempts - failures, coolDown: max(0, until - now))
    }

    /// Refuses a ceremony with a locked-out or cooling-down PIN authenticator, before any verification (nothing is
    /// counted): `code` is `invalid_grant` at the token endpoint, `pin_attempt_failed` elsewhere.
    func admit(_ authenticator: Authenticator, now: Int64, code: ErrorCode) throws(LatchError) {
        guard let status = status(of: authenticator, now: now) else { return }
        if status.state == FidoPinStatus.lockedOut {
            throw Self.refusal(code, "this PIN authenticator is locked after \(maxAttempts) wrong PINs; an administrator can unlock it", status)
        }
        if status.coolDown > 0 {
            throw Self.refusal(code, "wait \(status.coolDown) seconds before the next PIN attempt", status)
        }
    }

    static func refusal(_ code: ErrorCode, _ message: String, _ status: FidoPinStatus) -> LatchError {
        LatchError(code, message, members: ["pinStatus": status.json])
    }
}

extension FidoPinStatus {
    var json: JSONValue {
        .object(["state": .string(state), "remainingTries": .int(Int64(remainingTries)), "coolDown": .int(coolDown)])
    }
}

extension LatchAuthenticatorModel {
    /// The Latch SDK model an authenticator claims by its AAGUID; nil for any other authenticator.
    static func of(_ authenticator: Authenticator) -> LatchAuthenticatorModel? {
        guard authenticator.aaguid.count == 16 else { return nil }
        return LatchAuthenticatorModel(rawValue: authenticator.aaguid.map { String(format: "%02x", $0) }.joined())
    }
}

extension FidoService {
    /// Counts a PIN authenticator's failed proof, once even when attempts race (compare-and-set on the count read,
    /// retried on a fresh read while attempts keep racing), and returns the error to answer with its new status.
    func countFailure(of authenticator: Authenticator, user: User, code: ErrorCode) async throws -> LatchError {
        let policy = settings.pin
        var current = authenticator
        for _ in 0...(policy.maxAttempts + 2) {
            let now = clock.seconds()
            if current.failedAttempts >= policy.maxAttempts { break }
            let observed = current.failedAttempts
            let id = current.id
            let locks = observed + 1 >= policy.maxAttempts
            let event = SecurityEvent.now(
                locks ? .authenticatorLocked : .authenticatorPinFailed, actor: "system", userID: user.id,
                detail: "\(current.id) \(observed + 1)/\(policy.maxAttempts)", clock: clock, random: random)
            if try await store.succeeds({ transaction, refusal in
                transaction.recordFailedAttempt(id: id, observed: observed, at: now, ifChanged: refusal)
                transaction.record(event)
            }) {
                current.failedAttempts = observed + 1
                current.lastFailedAt = now
                if locks { logger.notice("PIN authenticator locked out", metadata: ["user": "\(user.id)", "authenticator": "\(current.id)"]) }
                break
            }
            guard let fresh = try await store.authenticator(credentialID: current.credentialID)?.1 else { break }
            current = fresh
        }
        let status = policy.status(of: current, now: clock.seconds())
            ?? FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0)
        let message = status.state == FidoPinStatus.lockedOut
            ? "wrong PIN; the authenticator is now locked — an administrator can unlock it"
            : "wrong PIN; \(status.remainingTries) tries remain" + (status.coolDown > 0 ? ", the next after \(status.coolDown) seconds" : "")
        return PinPolicy.refusal(code, message, status)
    }
}
