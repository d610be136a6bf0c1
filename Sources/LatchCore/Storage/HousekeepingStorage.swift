/// Removing rows nobody can use any more, inside a unit of work.
public protocol HousekeepingWrites {
    /// Deletes up to `limit` expired rows of each kind — nonces, remembered `jti`s, and sessions past their
    /// purge time (their absolute expiry, or a day after revocation); reports how many in all.
    func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Deletes up to `limit` expired rows of each kind; returns how many in all.
    public func purgeExpired(now: Int64, limit: Int) async throws -> Int {
        try await count { $0.purgeExpired(now: now, limit: limit) }
    }
}
