import Foundation
import LatchJOSE
import LatchModel

/// How the SQL stores spell domain values in columns, so that a row reads the same from every backend.
///
/// A value this version cannot read (an unknown user kind, a key that does not parse) is never read as some
/// default: it throws ``StoreUnavailableError`` naming the column, and the request answers 503.
public enum StoredForm {
    public static func userKind(_ text: String) throws -> UserKind {
        guard let kind = UserKind(rawValue: text) else { throw unreadable("users.kind", text) }
        return kind
    }

    /// Custom claims: a JSON object.
    public static func claims(_ text: String) throws -> [String: JSONValue] {
        if text == "{}" { return [:] }
        guard case .object(let claims)? = try? JSONValue.parse(Data(text.utf8)) else { throw unreadable("users.claims", text) }
        return claims
    }

    public static func claimsText(_ claims: [String: JSONValue]) -> String {
        claims.isEmpty ? "{}" : String(decoding: JSONValue.object(claims).serialized(), as: UTF8.self)
    }

    /// A list of claim names: a JSON array of strings.
    public static func names(_ text: String) throws -> [String] {
        guard case .array(let values)? = try? JSONValue.parse(Data(text.utf8)) else { throw unreadable("allowed_claims", text) }
        return try values.map {
            guard let name = $0.stringValue else { throw unreadable("allowed_claims", text) }
            return name
        }
    }

    public static func namesText(_ names: [String]) -> String {
        String(decoding: JSONValue.array(names.map(JSONValue.string)).serialized(), as: UTF8.self)
    }

    /// Authentication methods: space-separated.
    public static func amr(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }

    public static func amrText(_ amr: [String]) -> String { amr.joined(separator: " ") }

    /// A public key: its algorithm's name and its DER.
    public static func publicKey(algorithm: String, der: Data, column: String) throws -> PublicKey {
        try readKey(algorithm: algorithm, der: der, column: column) { der, algorithm throws(JOSEError) in try PublicKey(der: der, algorithm: algorithm) }
    }

    /// A public key that many sign-ins share (an issuer's, an admin's test key), parsed once per process.
    /// Device keys use ``publicKey(algorithm:der:column:)``: each belongs to one user, so a cache of them would
    /// hold only the last few thousand users' keys and miss on nearly every sign-in of a large user base.
    public static func sharedPublicKey(algorithm: String, der: Data, column: String) throws -> PublicKey {
        try readKey(algorithm: algorithm, der: der, column: column, parse: sharedKeys.key)
    }

    /// Keys read by ``sharedPublicKey(algorithm:der:column:)``.
    public static let sharedKeys = ParsedKeyCache(capacity: 512)

    private static func readKey(
        algorithm: String, der: Data, column: String, parse: (Data, JWSAlgorithm) throws(JOSEError) -> PublicKey
    ) throws -> PublicKey {
        guard let parsed = JWSAlgorithm(rawValue: algorithm) else { throw unreadable(column, algorithm) }
        do {
            return try parse(der, parsed)
        } catch {
            throw unreadable(column, "\(der.count) bytes of \(algorithm) key")
        }
    }

    /// A signature counter: 0 to 2³² − 1.
    public static func signCount(_ value: Int64) throws -> UInt32 {
        guard let count = UInt32(exactly: value) else { throw unreadable("device_keys.sign_count", String(value)) }
        return count
    }

    public static func algorithm(_ text: String, column: String) throws -> JWSAlgorithm {
        guard let parsed = JWSAlgorithm(rawValue: text) else { throw unreadable(column, text) }
        return parsed
    }

    /// Reads an out-of-band transaction's operation and state columns.
    public static func outOfBand(operation: String, state: String) throws -> (OutOfBandTransaction.Operation, OutOfBandTransaction.State) {
        guard let parsedOperation = OutOfBandTransaction.Operation(rawValue: operation) else { throw unreadable("oob_transactions.operation", operation) }
        guard let parsedState = OutOfBandTransaction.State(rawValue: state) else { throw unreadable("oob_transactions.state", state) }
        return (parsedOperation, parsedState)
    }

    /// Reads a custom provider's flow column.
    public static func customFlow(_ text: String) throws -> CustomProvider.Flow {
        guard let flow = CustomProvider.Flow(rawValue: text) else { throw unreadable("custom_providers.flow", text) }
        return flow
    }

    /// Reads a custom registration transaction's state column.
    public static func customTransactionState(_ text: String) throws -> CustomTransaction.State {
        guard let state = CustomTransaction.State(rawValue: text) else { throw unreadable("custom_transactions.state", text) }
        return state
    }

    /// Reads an admin role column.
    public static func adminRole(_ text: String, column: String) throws -> AdminRole {
        guard let role = AdminRole(rawValue: text) else { throw unreadable(column, text) }
        return role
    }

    static func unreadable(_ column: String, _ value: String) -> StoreUnavailableError {
        StoreUnavailableError("a stored \(column) cannot be read by this version of Latch: \(value.prefix(64))")
    }
}
