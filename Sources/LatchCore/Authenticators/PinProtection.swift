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
    /// Seconds to wait after the 1st, 2nd, … failed proof of an *unbound* PIN authenticator (one registered before
    /// PIN binding, ``Authenticator/pinBindingKey`` nil), the last entry repeating. Anyone who knows the credential id
    /// can make such a failure, so it never locks the authenticator: failures only cool it down, and a good proof
    /// clears them (docs/fido.md, "Unbound PIN authenticators").
    public var unboundCoolDowns: [Int64] = [0, 10, 30, 60, 300, 900, 3600]
    /// The reservation limit used for unbound authenticators: never reached in practice, so they never lock.
    static let unboundAttemptLimit = Int(Int32.max)

    public init() {}

    /// The status of `authenticator` at `now`; nil when it is not a PIN authenticator. An unbound one is never
    /// `lockedOut` and always has `maxAttempts` tries: only its cool-down says how often it failed.
    public func status(of authenticator: Authenticator, now: Int64) -> FidoPinStatus? {
        guard LatchAuthenticatorModel.of(authenticator) == .pin else { return nil }
        let bound = authenticator.pinBindingKey != nil
        let failures = authenticator.failedAttempts
        if bound, failures >= maxAttempts { return FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0, bound: bound) }
        if failures == 0 { return FidoPinStatus(state: FidoPinStatus.unlocked, remainingTries: maxAttempts, coolDown: 0, bound: bound) }
        let wait = Self.coolDown(after: failures, of: bound ? coolDowns : unboundCoolDowns)
        let until = (authenticator.lastFailedAt ?? now).adding(seconds: wait)
        return FidoPinStatus(
            state: FidoPinStatus.lastAttemptFailed, remainingTries: bound ? maxAttempts - failures : maxAttempts, coolDown: max(0, until - now),
            bound: bound)
    }

    /// The lockout limit and cool-downs a reservation for `authenticator` runs under: the policy's for a bound PIN
    /// authenticator; for an unbound one, no reachable limit and ``unboundCoolDowns``.
    func reservation(for authenticator: Authenticator) -> (maxAttempts: Int, coolDowns: [Int64]) {
        authenticator.pinBindingKey != nil ? (maxAttempts, coolDowns) : (Self.unboundAttemptLimit, unboundCoolDowns)
    }

    /// The cool-down after the `failures`-th failure (0 for none).
    public static func coolDown(after failures: Int, of coolDowns: [Int64]) -> Int64 {
        guard failures > 0, !coolDowns.isEmpty else { return 0 }
        return coolDowns[min(failures - 1, coolDowns.count - 1)]
    }

    /// A SQL expression for the cool-down after `column` failures (`CASE column WHEN 1 THEN … ELSE <last> END`, the
    /// last entry repeating like ``coolDown(after:of:)``), for the stores' reservations: integer literals only, the
    /// policy's own numbers (never user input). Its size depends on `coolDowns` only (at most 16 entries), never on
    /// `maxAttempts`, so an unbound authenticator's unreachable limit costs nothing.
    public static func coolDownSQL(_ column: String, maxAttempts: Int, coolDowns: [Int64]) -> String {
        guard let last = coolDowns.last else { return "0" }
        guard coolDowns.count > 1 else { return "\(last)" }
        let cases = (1..<coolDowns.count).map { "WHEN \($0) THEN \(coolDowns[$0 - 1])" }.joined(separator: " ")
        return "(CASE \(column) \(cases) ELSE \(last) END)"
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
        var members: [String: JSONValue] = ["state": .string(state), "remainingTries": .int(Int64(remainingTries)), "coolDown": .int(coolDown)]
        if let bound { members["bound"] = .bool(bound) }
        return .object(members)
    }
}

extension LatchAuthenticatorModel {
    /// The Latch SDK model an authenticator claims by its AAGUID; nil for any other authenticator.
    static func of(_ authenticator: Authenticator) -> LatchAuthenticatorModel? {
        guard authenticator.aaguid.count == 16 else { return nil }
        return LatchAuthenticatorModel(rawValue: authenticator.aaguid.map { String(format: "%02x", $0) }.joined())
    }
}

/// A PIN attempt the store would not reserve (no attempt left, or a cool-down runs).
private struct PinReservationRefused: Error {}

extension FidoService {
    /// Reserves an attempt with a PIN authenticator before its proof is verified (one conditional update on the
    /// store, atomic across replicas) and returns the failure count it moved to; refused with the fresh status when
    /// the authenticator is locked out or cooling down — also when concurrent attempts took the last tries.
    func reservePinAttempt(of authenticator: Authenticator, now: Int64, code: ErrorCode) async throws -> Int {
        let policy = settings.pin
        let id = authenticator.id
        let (limit, coolDowns) = policy.reservation(for: authenticator)
        do {
            return try await store.write {
                $0.reservePinAttempt(id: id, maxAttempts: limit, coolDowns: coolDowns, at: now, ifRefused: PinReservationRefused())
            }.value
        } catch is PinReservationRefused {
            let fresh = try await store.authenticator(credentialID: authenticator.credentialID)?.1 ?? authenticator
            try policy.admit(fresh, now: now, code: code)
            let status = policy.status(of: fresh, now: now) ?? FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0)
            throw PinPolicy.refusal(code, "another attempt with this PIN authenticator was counted meanwhile; try again", status)
        }
    }

    /// Gives back the attempt reserved for `checked` when its assertion verified — the right PIN — but the sign-in or
    /// approval was refused afterwards (its ceremony used meanwhile, the authenticator used concurrently): that is not
    /// a wrong PIN. A failure here is logged; the attempt then stays counted.
    func releaseVerifiedPinAttempt(_ checked: CheckedAssertion) async {
        guard checked.model == .pin else { return }
        let id = checked.authenticator.id
        do {
            try await store.write { $0.releasePinAttempt(id: id) }
        } catch {
            logger.warning("a verified PIN attempt could not be given back", metadata: ["authenticator": "\(id)", "error": "\(error)"])
        }
    }

    /// Settles a reserved attempt whose signature did not verify: the reservation stays as the counted wrong PIN and
    /// its event is recorded; returns the error to answer with the status. `authenticator` carries the reserved count.
    func settlePinFailure(of authenticator: Authenticator, user: User, code: ErrorCode) async throws -> LatchError {
        let policy = settings.pin
        let count = authenticator.failedAttempts
        let bound = authenticator.pinBindingKey != nil
        let locks = bound && count >= policy.maxAttempts
        let event = SecurityEvent.now(
            locks ? .authenticatorLocked : .authenticatorPinFailed, actor: "system", userID: user.id,
            detail: bound ? "\(authenticator.id) \(count)/\(policy.maxAttempts)" : "\(authenticator.id) \(count) unbound", clock: clock, random: random)
        try await store.write { $0.record(event) }
        if locks { logger.notice("PIN authenticator locked out", metadata: ["user": "\(user.id)", "authenticator": "\(authenticator.id)"]) }
        let status = policy.status(of: authenticator, now: clock.seconds())
            ?? FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0)
        let message =
            if status.state == FidoPinStatus.lockedOut {
                "wrong PIN; the authenticator is now locked — an administrator can unlock it"
            } else if bound {
                "wrong PIN; \(status.remainingTries) tries remain" + (status.coolDown > 0 ? ", the next after \(status.coolDown) seconds" : "")
            } else {
                "wrong PIN (an unbound PIN authenticator: re-enrol it to bind it to this device)"
                    + (status.coolDown > 0 ? "; the next attempt after \(status.coolDown) seconds" : "")
            }
        return PinPolicy.refusal(code, message, status)
    }
}
