import Crypto

/// A CryptoKit key value shared across concurrency domains.
///
/// On Apple platforms swift-crypto re-exports CryptoKit, whose `P256`/`P384` signing key types are not declared
/// `Sendable` in the iOS 16–18 SDK interfaces; swift-crypto's own copies (Linux) are. The keys are immutable values:
/// every stored property is a `let` over an immutable representation (CryptoKit's software keys hold their bytes,
/// its Secure Enclave keys an immutable `SecKey` reference that Security documents as thread-safe), and no method
/// mutates them. Sharing one across tasks therefore cannot race, which is what `Sendable` promises.
///
/// The box is deliberately narrow: it can only be made for the four CryptoKit key types listed below (the
/// initialisers are the only way in), so it cannot launder any other non-`Sendable` value.
struct SendableKey<Key>: @unchecked Sendable {
    let key: Key
    private init(unchecked key: Key) { self.key = key }
}

extension SendableKey where Key == P256.Signing.PublicKey {
    init(_ key: Key) { self.init(unchecked: key) }
}

extension SendableKey where Key == P256.Signing.PrivateKey {
    init(_ key: Key) { self.init(unchecked: key) }
}

extension SendableKey where Key == P384.Signing.PublicKey {
    init(_ key: Key) { self.init(unchecked: key) }
}

extension SendableKey where Key == P384.Signing.PrivateKey {
    init(_ key: Key) { self.init(unchecked: key) }
}
