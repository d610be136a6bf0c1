/// Writing sign-in nonces inside a unit of work (they are read only by being consumed, see ``SingleUseWrites``).
public protocol NonceWrites {
    /// Records a nonce for `userID` and keeps only that user's `keepNewest` newest unexpired nonces.
    func insertNonce(_ nonce: String, userID: String, expiresAt: Int64, keepNewest: Int)
}
