import Foundation
import LatchJOSE
import LatchModel

/// Public keys already parsed from their stored DER, by algorithm and exact bytes.
///
/// Every federated sign-in reads its issuer's key from a row; parsing the DER again each time (the SPKI structure, the
/// curve point's check, an RSA modulus) is work a key that thousands of sign-ins share needs once. Parsing is a pure
/// function of the two, so a kept key is the key a fresh parse would give; a DER that does not parse is never kept. At
/// most `capacity` keys (a few hundred bytes each, a few KiB for RSA): past that, one kept key is dropped for each new
/// one (the first in the dictionary's order, which its per-process hash seed makes arbitrary).
public final class ParsedKeyCache: Sendable {
    struct Entry: Hashable {
        let algorithm: JWSAlgorithm
        let der: Data
    }

    public let capacity: Int
    private let keys: Locked<[Entry: PublicKey]>

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        keys = Locked([:])
    }

    /// The key for `der` read as `algorithm`, parsed now or earlier.
    public func key(der: Data, algorithm: JWSAlgorithm) throws(JOSEError) -> PublicKey {
        let entry = Entry(algorithm: algorithm, der: der)
        if let known = keys.withLock({ $0[entry] }) { return known }
        let parsed = try PublicKey(der: der, algorithm: algorithm)
        keys.withLock { keys in
            if keys.count >= capacity, keys[entry] == nil { keys.remove(at: keys.startIndex) }
            keys[entry] = parsed
        }
        return parsed
    }

    /// How many keys are kept.
    public var count: Int { keys.withLock { $0.count } }
}
