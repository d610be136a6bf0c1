import Foundation
import LatchCore
import LatchJOSE
import Testing

@Suite("Parsed-key cache: shared keys parsed once, the answer a fresh parse gives, bounded")
struct ParsedKeyCacheTests {
    @Test("A key read twice is parsed once and verifies what its private key signed")
    func keptAndCorrect() throws {
        let cache = ParsedKeyCache(capacity: 4)
        let privateKey = try PrivateKey.generate(.ES256)
        let der = privateKey.publicKey.derRepresentation
        let message = Data("sign-in".utf8)
        let signature = try privateKey.signature(for: message)
        let first = try cache.key(der: der, algorithm: .ES256)
        let second = try cache.key(der: der, algorithm: .ES256)
        #expect(cache.count == 1)
        #expect(first.isValidSignature(signature, for: message) && second.isValidSignature(signature, for: message))
        #expect(!second.isValidSignature(signature, for: Data("sign-out".utf8)))
        #expect(second.derRepresentation == der)
    }

    @Test("The algorithm is part of the key: bytes kept as one algorithm do not answer for another; failures are not kept")
    func algorithmAndFailures() throws {
        let cache = ParsedKeyCache(capacity: 4)
        let der = try PrivateKey.generate(.ES256).publicKey.derRepresentation
        _ = try cache.key(der: der, algorithm: .ES256)
        #expect(throws: JOSEError.self) { try cache.key(der: der, algorithm: .RS256) }
        #expect(throws: JOSEError.self) { try cache.key(der: der, algorithm: .ES384) }
        #expect(throws: JOSEError.self) { try cache.key(der: Data([0x30, 0x03, 0x02, 0x01, 0x00]), algorithm: .ES256) }
        #expect(cache.count == 1)
    }

    @Test("Never more than its capacity; every key still answers correctly after others were dropped")
    func bounded() throws {
        let cache = ParsedKeyCache(capacity: 8)
        let privateKeys = try (0..<20).map { _ in try PrivateKey.generate(.ES256) }
        let message = Data("bounded".utf8)
        for round in 0..<3 {
            for privateKey in privateKeys {
                let key = try cache.key(der: privateKey.publicKey.derRepresentation, algorithm: .ES256)
                let signature = try privateKey.signature(for: message)
                #expect(key.isValidSignature(signature, for: message), "round \(round)")
                #expect(cache.count <= 8)
            }
        }
        #expect(cache.count == 8)
    }

    @Test("Stored issuer and test keys read through it answer as a parse does; an unreadable one is a store error")
    func storedForm() throws {
        // The process-wide cache is shared with every other test running now, so this checks answers, not its count.
        let privateKey = try PrivateKey.generate(.ES256)
        let der = privateKey.publicKey.derRepresentation
        let message = Data("issuer".utf8)
        for _ in 0..<2 {
            let key = try StoredForm.sharedPublicKey(algorithm: "ES256", der: der, column: "issuer_keys.public_key")
            let signature = try privateKey.signature(for: message)
            #expect(key.derRepresentation == der && key.isValidSignature(signature, for: message))
        }
        #expect(throws: StoreUnavailableError.self) { try StoredForm.sharedPublicKey(algorithm: "RS256", der: der, column: "issuer_keys.public_key") }
        #expect(throws: StoreUnavailableError.self) { try StoredForm.sharedPublicKey(algorithm: "none", der: der, column: "issuer_keys.public_key") }
    }
}
