import Crypto
import Foundation
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// FIDO Metadata Service BLOBs for tests: a root, a signing certificate it issues, and compact JWS BLOBs signed
/// with the certificate's key and carrying it in `x5c`, as the FIDO Alliance signs the real one.
public enum TestMetadataBlob {
    public struct Signer: Sendable {
        public let root: Certificate
        public let leaf: Certificate
        let key: P256.Signing.PrivateKey

        /// A new root and signer, valid around `now`.
        public init(now: Date) throws {
            let rootKey = P256.Signing.PrivateKey()
            let name = try DistinguishedName { CommonName("Test metadata root") }
            root = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 86_400,
                notValidAfter: now + 86_400 * 365, issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                }, issuerPrivateKey: .init(rootKey))
            key = P256.Signing.PrivateKey()
            leaf = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: now - 86_400, notValidAfter: now + 86_400 * 30,
                issuer: name, subject: try DistinguishedName { CommonName("Test metadata signer") }, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions { Critical(KeyUsage(digitalSignature: true)) }, issuerPrivateKey: .init(rootKey))
        }

        /// The root as PEM.
        public var rootPEM: String { get throws { try root.serializeAsPEM().pemString } }

        /// A BLOB with `payload` (`{no, nextUpdate, entries}`), ES256 with `x5c` = the signing certificate.
        public func sign(_ payload: JSONValue) throws -> String {
            let header: JSONValue = .object(["alg": "ES256", "typ": "JWT", "x5c": .array([.string(Data(try Self.der(leaf)).base64EncodedString())])])
            let input = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(payload.serialized())
            return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)).rawRepresentation)
        }

        /// A certificate's DER, base64 (as MDS lists `attestationRootCertificates`).
        public static func base64(_ certificate: Certificate) throws -> String { Data(try der(certificate)).base64EncodedString() }

        static func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
    }
}
