/// Removing rows nobody can use any more, inside a unit of work.
public protocol HousekeepingWrites {
    /// Deletes up to `limit` expired rows of each kind — nonces, remembered `jti`s, sessions past their purge time
    /// (their absolute expiry, or ``revokedSessionRetention`` after revocation), out-of-band transactions ``outOfBandRetention`` seconds
    /// past their token's expiry, admin tokens ``adminTokenRetention`` seconds past theirs; reports how many in all.
    func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int>
}

/// How long a revoked session is kept before housekeeping deletes it (unless its absolute expiry comes first): one
/// day, so that its refresh tokens are still recognised — a replay of one is refused as reuse, not as unknown — and
/// the audit log and the console can still show it.
public let revokedSessionRetention: Int64 = 86_400

/// How long an expired admin token is kept (listed, refused) before housekeeping deletes it: 7 days.
public let adminTokenRetention: Int64 = 7 * 86_400

/// How long an out-of-band transaction is kept after its token expired (its status answers until then): 7 days.
public let outOfBandRetention: Int64 = 7 * 86_400

extension UnitOfWork {
    /// Deletes up to `limit` expired rows of each kind; returns how many in all.
    public func purgeExpired(now: Int64, limit: Int) async throws -> Int {
        try await count { $0.purgeExpired(now: now, limit: limit) }
    }
}
