/// The refresh-token rotation rule (RFC 9700 §4.14.2), as a pure function of the stored session.
///
/// Refresh tokens are MACs over (session, generation) (``RefreshTokenCodec``), so a presented generation that
/// verifies was issued by this server. `n` is the presented generation, `g` the live one, `r` the last one
/// rotated away.
///
/// - Step 1. Revoked or expired → `inactive`; another client's → `wrongClient`; `n > g` was never issued →
///   `unknown`. Nothing changes.
/// - Step 2. `n == g`: the live token. `g ← g+1`, `r ← n`, `rotatedAt ← now` → `rotated`.
/// - Step 3. `n == r` within the grace window: a retry whose answer was lost. Its successors were never
///   presented (presenting one would have moved `r`), so `g ← g+1` kills them and issues a fresh one →
///   `reissued`. A lost response must not sign a phone out.
/// - Step 4. Any other `n < g` is an older token presented again: reuse. The family is revoked (`revokedAt ← now`),
///   and that revocation is written although the request fails → `reuseDetected`.
public enum RefreshRotation {
    public enum Outcome: String, Sendable, Hashable {
        case rotated, reissued, unknown, inactive, wrongClient, reuseDetected
        /// The session is bound to a DPoP key (RFC 9449 §5) and the request proved another key, or none: nothing changes.
        case wrongKey
        /// The request's DPoP proof was used before (its `jti`, spent with the rotation): nothing changes.
        case replayedProof
    }

    public static func decide(_ session: Session, presented n: Int64, clientID: String, presentedKey: String? = nil, now: Int64, grace: Int64)
        -> SessionUpdate<Outcome>
    {
        // Step 1.
        guard session.isActive(at: now) else { return SessionUpdate(session: nil, result: .inactive) }
        guard session.clientID == clientID else { return SessionUpdate(session: nil, result: .wrongClient) }
        if let bound = session.dpopJKT, bound != presentedKey { return SessionUpdate(session: nil, result: .wrongKey) }
        guard n <= session.generation else { return SessionUpdate(session: nil, result: .unknown) }
        var next = session
        // Step 2.
        if n == session.generation {
            next.generation = n + 1
            next.retryGeneration = n
            next.rotatedAt = now
            return SessionUpdate(session: next, result: .rotated)
        }
        // Step 3.
        if n == session.retryGeneration, let rotatedAt = session.rotatedAt, now - rotatedAt <= grace {
            next.generation += 1
            return SessionUpdate(session: next, result: .reissued)
        }
        // Step 4.
        next.revokedAt = now
        return SessionUpdate(session: next, result: .reuseDetected)
    }
}
