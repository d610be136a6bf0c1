import Crypto
import Foundation
import LatchModel

/// The team credentials of Apple's DeviceCheck API: the team id, the key id and the team's `.p8` private key.
public struct DeviceCheckCredentials: Sendable {
    public var teamID: String
    public var keyID: String
    public var privateKey: P256.Signing.PrivateKey

    public init(teamID: String, keyID: String, privateKey: P256.Signing.PrivateKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKey = privateKey
    }
}

/// The two per-device bits Apple keeps for a team (`query_two_bits`).
public struct DeviceCheckBits: Sendable, Hashable {
    public var bit0: Bool
    public var bit1: Bool
    public init(bit0: Bool, bit1: Bool) {
        self.bit0 = bit0
        self.bit1 = bit1
    }
}

/// Why Apple's DeviceCheck API did not say yes.
public enum DeviceCheckAPIError: Error, Sendable {
    /// 400: the device token is missing, malformed, or not Apple's (a forged or replayed token).
    case badToken(String)
    /// 401, 403, 429, 5xx, a timeout or no connection: nothing can be decided now.
    case unavailable(String)
}

/// Apple's DeviceCheck server API (`validate_device_token`, `query_two_bits`, `update_two_bits`), on the
/// development host for debug builds and the production host for release builds. The composition root provides
/// the HTTP implementation; tests point it at a local stand-in of Apple's API.
public protocol DeviceCheckAPI: Sendable {
    func validate(token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError)
    /// The device's bits; nil when they were never set.
    func queryBits(token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError) -> DeviceCheckBits?
    func updateBits(_ bits: DeviceCheckBits, token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError)
}

extension LatchError {
    /// A DeviceCheck API failure as Latch answers it: a bad token is refused, anything else is 503.
    init(_ error: DeviceCheckAPIError) {
        switch error {
        case .badToken(let detail): self.init(.attestationUntrusted, "Apple's DeviceCheck API refused the token: \(detail)")
        case .unavailable(let detail): self.init(.temporarilyUnavailable, "Apple's DeviceCheck API cannot be used now (\(detail)); retry later")
        }
    }
}
