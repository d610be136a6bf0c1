// Encoding a KeyDescription as DER (its ASN.1 is in AndroidKeyDescription.swift).

import LatchModel
import SwiftASN1

extension AndroidKeyDescription: DERSerializable {
    /// The DER encoding of this KeyDescription: the value to put in an extension with OID
    /// `extensionOID` (for tests and simulated attestation evidence). AuthorizationList elements
    /// are written in ascending tag order and SET OF members in DER order, so parsing the result
    /// gives back an equal value (up to the ordering notes on `AttestationApplicationId` and
    /// `tagsInAscendingOrder`).
    public func derEncoded() -> [UInt8] {
        var serializer = DER.Serializer()
        self.write(into: &serializer)
        return serializer.serializedBytes
    }

    public func serialize(into coder: inout DER.Serializer) throws {
        self.write(into: &coder)
    }

    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeInteger(self.attestationVersion)
            coder.writeInteger(self.attestationSecurityLevel.rawValue, identifier: .enumerated)
            coder.writeInteger(self.keyMintVersion)
            coder.writeInteger(self.keyMintSecurityLevel.rawValue, identifier: .enumerated)
            coder.writeOctetString(self.attestationChallenge)
            coder.writeOctetString(self.uniqueId)
            self.softwareEnforced.write(into: &coder)
            self.hardwareEnforced.write(into: &coder)
        }
    }
}

extension AndroidKeyDescription.AuthorizationList {
    func write(into coder: inout DER.Serializer) {
        typealias Tag = Self.Tag
        var elements: [(tag: UInt, write: (inout DER.Serializer) -> Void)] = []
        func add(_ tag: UInt, _ write: @escaping (inout DER.Serializer) -> Void) {
            elements.append((tag, write))
        }
        if let purpose { add(Tag.purpose) { $0.writeIntegerSet(purpose) } }
        if let algorithm { add(Tag.algorithm) { $0.writeInteger(algorithm) } }
        if let keySize { add(Tag.keySize) { $0.writeInteger(keySize) } }
        if let digest { add(Tag.digest) { $0.writeIntegerSet(digest) } }
        if let padding { add(Tag.padding) { $0.writeIntegerSet(padding) } }
        if let ecCurve { add(Tag.ecCurve) { $0.writeInteger(ecCurve) } }
        if self.noAuthRequired { add(Tag.noAuthRequired) { $0.appendPrimitiveNode(identifier: .null) { _ in } } }
        if let creationDateTime { add(Tag.creationDateTime) { $0.writeInteger(creationDateTime) } }
        if let origin { add(Tag.origin) { $0.writeInteger(origin) } }
        if let rootOfTrust { add(Tag.rootOfTrust) { rootOfTrust.write(into: &$0) } }
        if let osVersion { add(Tag.osVersion) { $0.writeInteger(osVersion) } }
        if let osPatchLevel { add(Tag.osPatchLevel) { $0.writeInteger(osPatchLevel) } }
        if let attestationApplicationId {
            add(Tag.attestationApplicationId) { coder in
                var inner = DER.Serializer()
                attestationApplicationId.write(into: &inner)
                coder.writeOctetString(inner.serializedBytes)
            }
        }
        if let vendorPatchLevel { add(Tag.vendorPatchLevel) { $0.writeInteger(vendorPatchLevel) } }
        if let bootPatchLevel { add(Tag.bootPatchLevel) { $0.writeInteger(bootPatchLevel) } }
        if let moduleHash { add(Tag.moduleHash) { $0.writeOctetString(moduleHash) } }
        for other in self.otherElements {
            add(other.tag) { $0.serializeRawBytes(other.value) }
        }
        // Stable sort: ascending tag order, as DER requires for this SEQUENCE.
        let ordered = elements.enumerated().sorted { lhs, rhs in
            (lhs.element.tag, lhs.offset) < (rhs.element.tag, rhs.offset)
        }
        coder.appendConstructedNode(identifier: .sequence) { coder in
            for (_, element) in ordered {
                coder.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: element.tag, tagClass: .contextSpecific)
                ) { coder in
                    element.write(&coder)
                }
            }
        }
    }
}

extension AndroidKeyDescription.RootOfTrust {
    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeOctetString(self.verifiedBootKey)
            coder.appendPrimitiveNode(identifier: .boolean) { $0.append(self.deviceLocked ? 0xFF : 0x00) }
            coder.writeInteger(self.verifiedBootState.rawValue, identifier: .enumerated)
            if let hash = self.verifiedBootHash {
                coder.writeOctetString(hash)
            }
        }
    }
}

extension AndroidKeyDescription.AttestationApplicationId {
    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeSetOf(self.packageInfos.map { info in
                var element = DER.Serializer()
                element.appendConstructedNode(identifier: .sequence) { coder in
                    coder.writeOctetString(info.packageName)
                    coder.writeInteger(info.version)
                }
                return element.serializedBytes
            })
            coder.writeSetOf(self.signatureDigests.map { digest in
                var element = DER.Serializer()
                element.writeOctetString(digest)
                return element.serializedBytes
            })
        }
    }
}

extension DER.Serializer {
    /// Minimal two's-complement INTEGER (or ENUMERATED) encoding; never throws.
    fileprivate mutating func writeInteger(_ value: Int, identifier: ASN1Identifier = .integer) {
        self.appendPrimitiveNode(identifier: identifier) { bytes in
            var bigEndian: [UInt8] = []
            var remaining = value
            for _ in 0..<Int.bitWidth / 8 {
                bigEndian.append(UInt8(truncatingIfNeeded: remaining))
                remaining >>= 8
            }
            bigEndian.reverse()
            // Drop leading bytes that only repeat the sign bit of the next one.
            var start = 0
            while start < bigEndian.count - 1 {
                let byte = bigEndian[start]
                let nextTopBit = bigEndian[start + 1] & 0x80
                if (byte == 0x00 && nextTopBit == 0) || (byte == 0xFF && nextTopBit != 0) {
                    start += 1
                } else {
                    break
                }
            }
            bytes.append(contentsOf: bigEndian[start...])
        }
    }

    fileprivate mutating func writeOctetString(_ content: [UInt8]) {
        self.appendPrimitiveNode(identifier: .octetString) { $0.append(contentsOf: content) }
    }

    fileprivate mutating func writeIntegerSet(_ values: Set<Int>) {
        self.writeSetOf(values.map { value in
            var element = DER.Serializer()
            element.writeInteger(value)
            return element.serializedBytes
        })
    }

    /// SET OF with members in DER order (X.690 11.6: ascending as octet strings).
    fileprivate mutating func writeSetOf(_ encodedMembers: [[UInt8]]) {
        let sorted = encodedMembers.sorted { $0.lexicographicallyPrecedes($1) }
        self.appendConstructedNode(identifier: .set) { coder in
            for member in sorted {
                coder.serializeRawBytes(member)
            }
        }
    }
}
