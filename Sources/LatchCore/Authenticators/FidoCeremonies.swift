import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// FIDO ceremony ids: `lfc_<challenge>.<expiry>.<kind>.<user>.<MAC>`, stateless like registration challenges —
/// the MAC (HMAC-SHA256 under a key derived from the key-encryption key) binds the challenge, the expiry, the kind
/// (`reg`, `auth`, `pin`, `new` or `oob`) and the user: its id (empty for a discoverable sign-in), followed for a
/// sign-up by the chosen username and for an out-of-band ceremony by its transaction id, as `<id>~<base64url value>`. The challenge is the 32 random bytes the id
/// carries; the ceremony is consumed as a single-use value in the unit of work that completes it.
public struct FidoCeremonies: Sendable {
    public enum Kind: String, Sendable {
        case registration = "reg"
        case authentication = "auth"
        /// A PIN change: an assertion with the old key and a registration of the new one, over one challenge.
        case pinChange = "pin"
        /// Passwordless sign-up: the first authenticator of a user created when the ceremony completes.
        case signUp = "new"
        /// An out-of-band transaction's ceremony (registration, approval or deregistration on the redeeming device).
        case outOfBand = "oob"
    }

    /// A ceremony id that checked out.
    public struct Ceremony: Sendable {
        public var challenge: [UInt8]
        public var userID: String?
        /// What the ceremony is bound to besides the user: a sign-up's username, an out-of-band transaction's id.
        public var bound: String?
        public var consumes: SingleUse
    }

    static let prefix = "lfc_"
    static let consumedIssuer = "latch:fido-ceremony"

    private let format: MACToken
    let lifetime: Int64

    public init(key: SymmetricKey, lifetime: Int64) {
        format = MACToken(prefix: Self.prefix, domain: "lfc1", maximumLength: 1024, key: key)
        self.lifetime = lifetime
    }

    /// A new ceremony id and its challenge.
    public func begin(_ kind: Kind, userID: String?, bound: String? = nil, random: RandomSource, now: Int64, expiresAt cap: Int64? = nil)
        -> (id: String, challenge: [UInt8])
    {
        let challenge = random.bytes(32)
        let encoded = Base64URL.encode(Data(challenge))
        let expiresAt = min(now.adding(seconds: lifetime), cap ?? .max)
        var user = userID ?? ""
        if let bound { user += "~" + Base64URL.encode(Data(bound.utf8)) }
        return (format.seal([encoded, String(expiresAt), kind.rawValue, user]), challenge)
    }

    /// The ceremony `id` names, when Latch issued it for `kind` and it is still valid at `now`.
    public func check(_ id: String, _ kind: Kind, now: Int64) throws(LatchError) -> Ceremony {
        guard id.utf8.count <= 1024, id.hasPrefix(Self.prefix) else { throw LatchError.invalidGrant("the ceremony id is not one Latch issued") }
        guard let parts = format.open(id, fieldCount: 4), let challenge = Base64URL.decode(parts[0]), challenge.count == 32,
            let expiresAt = MACToken.integer(parts[1]), parts[2] == kind.rawValue
        else { throw LatchError.invalidGrant("the ceremony id is not one Latch issued for this ceremony") }
        guard now < expiresAt else { throw LatchError.invalidGrant("the ceremony has expired; start again") }
        let user = parts[3].split(separator: "~", maxSplits: 1, omittingEmptySubsequences: false)
        let bound = user.count == 2 ? Base64URL.decode(user[1]).flatMap { String(data: $0, encoding: .utf8) } : nil
        return Ceremony(
            challenge: Array(challenge), userID: user[0].isEmpty ? nil : String(user[0]), bound: bound,
            consumes: .jti(id, issuer: Self.consumedIssuer, until: expiresAt))
    }
}
