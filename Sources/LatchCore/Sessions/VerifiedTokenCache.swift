import LatchModel

/// Access tokens this replica verified recently, with their claims: a device sends the same access token with
/// every request for up to an hour, and the ES256 verification is the largest part of a signed-in request.
///
/// A hit needs the identical token string (the dictionary compares every byte), so it stands for exactly the
/// verification that produced it; the caller still checks expiry and the session on every request, so
/// revocation takes effect at once. Bounded: past `capacity`, the oldest entries make room.
final class VerifiedTokenCache: Sendable {
    private struct State {
        var claims: [String: AccessTokenClaims] = [:]
        /// Insertion order, for eviction; `next` is the slot the next insertion overwrites.
        var order: [String?]
        var next = 0
    }

    private let state: Locked<State>

    init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one token")
        state = Locked(State(order: Array(repeating: nil, count: capacity)))
    }

    func claims(for token: String) -> AccessTokenClaims? {
        state.withLock { $0.claims[token] }
    }

    func insert(_ claims: AccessTokenClaims, for token: String) {
        state.withLock { state in
            guard state.claims.updateValue(claims, forKey: token) == nil else { return }
            if let evicted = state.order[state.next] { state.claims[evicted] = nil }
            state.order[state.next] = token
            state.next = (state.next + 1) % state.order.count
        }
    }

    var count: Int { state.withLock { $0.claims.count } }
}
