import Foundation
@testable import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Issuer login: JWKS reading and consumer ids")
struct IssuerLoginTests {
    @Test("A JWKS yields its signing keys by kid; encryption keys, private keys, mismatched algs and unknown types are left out")
    func parseJWKS() throws {
        let es256 = try PrivateKey.generate(.ES256).publicKey
        let es384 = try PrivateKey.generate(.ES384).publicKey
        let rsa = TestKeys.rsa.publicKey
        var mismatched = es256.jwk(kid: "mismatch")
        mismatched.alg = "RS256"
        var encryption = es256.jwk(kid: "enc")
        encryption.use = "enc"
        let set = JSONWebKeySet(keys: [es256.jwk(kid: "a"), es384.jwk(kid: "b"), rsa.jwk(kid: "c"), mismatched, encryption])
        var json = try JSONValue.parse(Array(try JSONEncoder().encode(set)))
        // A private member and an unknown key type.
        if case .object(var root) = json, case .array(var keys)? = root["keys"] {
            keys.append(.object(["kty": "EC", "kid": "private", "crv": "P-256", "x": .string(es256.jwk(kid: "").x!), "y": .string(es256.jwk(kid: "").y!), "d": "AAAA"]))
            keys.append(.object(["kty": "OKP", "kid": "okp", "crv": "Ed25519", "x": "AAAA"]))
            root["keys"] = .array(keys)
            json = .object(root)
        }
        let keys = try LoginIssuerRegistry.parseJWKS(json.serialized())
        #expect(Set(keys.keys) == ["a", "b", "c"])
        #expect(keys["b"]?.algorithm == .ES384)
        #expect(keys["c"]?.algorithm == .RS256)
        #expect(throws: LatchError.self) { try LoginIssuerRegistry.parseJWKS(Array("[]".utf8)) }
        #expect(throws: LatchError.self) { try LoginIssuerRegistry.parseJWKS([UInt8](repeating: 0x20, count: 65 * 1024)) }
    }

    @Test("2,000 mutations of a JWKS never crash the reader; an EC key read is only ever the published one (bounded fuzz)")
    func fuzzJWKS() throws {
        let key = try PrivateKey.generate(.ES256).publicKey
        let original = Array(try JSONEncoder().encode(JSONWebKeySet(keys: [key.jwk(kid: "a"), TestKeys.rsa.publicKey.jwk(kid: "r")])))
        var random = SplitMix(seed: 11)
        let start = Date()
        for _ in 0..<2_000 where Date().timeIntervalSince(start) < 20 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            guard let keys = try? LoginIssuerRegistry.parseJWKS(bytes) else { continue }
            #expect(keys.count <= 2)
            for found in keys.values where found.algorithm == .ES256 { #expect(found.derRepresentation == key.derRepresentation) }
        }
    }

    @Test("Consumer ids: 1–16 ids of 1–128 bytes separated by single spaces, no control or space characters, no repeats")
    func consumers() throws {
        #expect(try IssuerTokenProfile.consumers("c-1") == ["c-1"])
        #expect(try IssuerTokenProfile.consumers("c-1 c-2 ü") == ["c-1", "c-2", "ü"])
        #expect(try IssuerTokenProfile.consumers((0..<16).map { "c\($0)" }.joined(separator: " ")).count == 16)
        for bad in ["", " ", "c-1 ", " c-1", "c-1  c-2", "c-1 c-1", "c\u{0}", "c\u{85}", "c\u{A0}d", String(repeating: "x", count: 129),
                    (0..<17).map { "c\($0)" }.joined(separator: " ")] {
            #expect(throws: LatchError.self, "\(bad.debugDescription)") { try IssuerTokenProfile.consumers(bad) }
        }
    }
}
