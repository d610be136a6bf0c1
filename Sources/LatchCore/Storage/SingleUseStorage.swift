/// A value that may be used once.
public enum SingleUse: Sendable, Hashable {
    /// An assertion `jti` (or a sign-in nonce) from `issuer`, remembered until `until` (its `exp` plus skew).
    case jti(String, issuer: String, until: Int64)
}

/// Reading whether a single-use value was used (to refuse early, before work whose result could not be kept; the
/// consumption in the unit of work still decides).
public protocol SingleUseStore: Sendable {
    /// Whether `value` was consumed (and is still remembered).
    func isUsed(_ value: SingleUse) async throws -> Bool
}

/// Consuming single-use values inside a unit of work.
public protocol SingleUseWrites {
    /// Consumes `value` in one atomic statement; refuses with `refusal` when it is unknown, expired or used.
    func consume(_ value: SingleUse, ifUnavailable refusal: any Error & Sendable)
}

extension UnitOfWork {
    /// Consumes `value` on its own; `false` when it was unknown, expired or used.
    public func consume(_ value: SingleUse) async throws -> Bool {
        try await succeeds { $0.consume(value, ifUnavailable: $1) }
    }
}
