// Parsing the KeyDescription extension (its ASN.1 and the rules followed are in AndroidKeyDescription.swift).

import LatchModel
import SwiftASN1

extension AndroidKeyDescription {
    /// Parses the extension's value (the content of the extnValue OCTET STRING, i.e. the DER of
    /// KeyDescription). Never traps; every failure is an `AndroidKeyDescriptionError`.
    public init(extensionValue bytes: [UInt8]) throws(AndroidKeyDescriptionError) {
        try self.init(extensionValue: bytes[...])
    }

    /// Parses the extension's value; see `init(extensionValue:)`.
    public init(extensionValue bytes: ArraySlice<UInt8>) throws(AndroidKeyDescriptionError) {
        guard bytes.count <= Self.maximumEncodedSize else {
            throw AndroidKeyDescriptionError(
                .tooLarge,
                "extension value is \(bytes.count) bytes; the limit is \(Self.maximumEncodedSize)"
            )
        }
        let root: ASN1Node
        do {
            root = try DER.parse(bytes)
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "not DER: \(error)")
        }
        try self.init(derEncoded: root)
    }

    /// Parses an already DER-parsed KeyDescription node. No size limit applies here: the caller
    /// parsed the bytes.
    public init(derEncoded root: ASN1Node) throws(AndroidKeyDescriptionError) {
        do {
            self = try Self.decode(root)
        } catch let error as AndroidKeyDescriptionError {
            throw error
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "\(error)")
        }
    }

    private static func decode(_ root: ASN1Node) throws -> AndroidKeyDescription {
        try DER.sequence(root, identifier: .sequence) { nodes in
            let version = try Int(derEncoded: &nodes)
            guard Self.supportedAttestationVersions.contains(version) else {
                throw AndroidKeyDescriptionError(.unsupportedVersion, "attestationVersion \(version)")
            }
            let attestationSecurityLevel = try SecurityLevel.decode(&nodes, field: "attestationSecurityLevel")
            let keyMintVersion = try Int(derEncoded: &nodes)
            let keyMintSecurityLevel = try SecurityLevel.decode(&nodes, field: "keyMintSecurityLevel")
            let challenge = try ASN1OctetString(derEncoded: &nodes)
            let uniqueId = try ASN1OctetString(derEncoded: &nodes)
            guard let softwareNode = nodes.next(), let hardwareNode = nodes.next() else {
                throw AndroidKeyDescriptionError(.malformed, "KeyDescription lacks its authorization lists")
            }
            let softwareEnforced = try AuthorizationList.decode(softwareNode)
            let hardwareEnforced = try AuthorizationList.decode(hardwareNode)
            return AndroidKeyDescription(
                attestationVersion: version,
                attestationSecurityLevel: attestationSecurityLevel,
                keyMintVersion: keyMintVersion,
                keyMintSecurityLevel: keyMintSecurityLevel,
                attestationChallenge: Array(challenge.bytes),
                uniqueId: Array(uniqueId.bytes),
                softwareEnforced: softwareEnforced,
                hardwareEnforced: hardwareEnforced
            )
        }
    }
}

extension AndroidKeyDescription.SecurityLevel {
    fileprivate static func decode(
        _ nodes: inout ASN1NodeCollection.Iterator,
        field: String
    ) throws -> Self {
        let raw = try Int(derEncoded: &nodes, withIdentifier: .enumerated)
        guard let level = Self(rawValue: raw) else {
            throw AndroidKeyDescriptionError(.invalidSecurityLevel, "\(field) = \(raw)")
        }
        return level
    }
}

extension AndroidKeyDescription.RootOfTrust {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let key = try ASN1OctetString(derEncoded: &nodes)
            guard let lockedNode = nodes.next() else {
                throw AndroidKeyDescriptionError(.malformed, "RootOfTrust lacks deviceLocked")
            }
            // BER reading on purpose: real devices encode TRUE as 0x01 (see the file comment).
            // Identifier and length (exactly one content octet) are still checked.
            let locked = try Bool(berEncoded: lockedNode, withIdentifier: .boolean)
            let rawState = try Int(derEncoded: &nodes, withIdentifier: .enumerated)
            guard let state = AndroidKeyDescription.VerifiedBootState(rawValue: rawState) else {
                throw AndroidKeyDescriptionError(.invalidVerifiedBootState, "verifiedBootState = \(rawState)")
            }
            let hash = try nodes.next().map { try ASN1OctetString(derEncoded: $0) }
            return Self(
                verifiedBootKey: Array(key.bytes),
                deviceLocked: locked,
                verifiedBootState: state,
                verifiedBootHash: hash.map { Array($0.bytes) }
            )
        }
    }
}

extension AndroidKeyDescription.AttestationApplicationId {
    /// Decodes the DER carried inside the attestationApplicationId OCTET STRING.
    fileprivate static func decode(contentOf octets: ArraySlice<UInt8>) throws -> Self {
        do {
            let root = try DER.parse(octets)
            return try DER.sequence(root, identifier: .sequence) { nodes in
                guard let packagesNode = nodes.next(), let digestsNode = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "AttestationApplicationId needs two SETs")
                }
                let packages = try DER.sequence(packagesNode, identifier: .set) { packageNodes in
                    var result: [AndroidKeyDescription.AttestationPackageInfo] = []
                    while let packageNode = packageNodes.next() {
                        result.append(try AndroidKeyDescription.AttestationPackageInfo.decode(packageNode))
                    }
                    return result
                }
                let digests = try DER.sequence(digestsNode, identifier: .set) { digestNodes in
                    var result: [[UInt8]] = []
                    while let digestNode = digestNodes.next() {
                        result.append(Array(try ASN1OctetString(derEncoded: digestNode).bytes))
                    }
                    return result
                }
                return Self(packageInfos: packages, signatureDigests: digests)
            }
        } catch {
            throw AndroidKeyDescriptionError(.malformedAttestationApplicationId, "\(error)")
        }
    }
}

extension AndroidKeyDescription.AttestationPackageInfo {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let name = try ASN1OctetString(derEncoded: &nodes)
            let version = try Int(derEncoded: &nodes)
            return Self(packageName: Array(name.bytes), version: version)
        }
    }
}

extension AndroidKeyDescription.AuthorizationList {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        guard node.identifier == .sequence, case .constructed(let children) = node.content else {
            throw AndroidKeyDescriptionError(
                .malformed,
                "AuthorizationList is not a SEQUENCE (found \(node.identifier))"
            )
        }
        var list = Self()
        var seen = Set<UInt>()
        var previousTag: UInt?
        for child in children {
            guard child.identifier.tagClass == .contextSpecific, case .constructed(let wrapped) = child.content
            else {
                throw AndroidKeyDescriptionError(
                    .malformed,
                    "AuthorizationList element \(child.identifier) is not an EXPLICIT context-specific tag"
                )
            }
            var inner = wrapped.makeIterator()
            guard let value = inner.next(), inner.next() == nil else {
                throw AndroidKeyDescriptionError(
                    .malformed,
                    "AuthorizationList tag [\(child.identifier.tagNumber)] must wrap exactly one element"
                )
            }
            let tag = child.identifier.tagNumber
            guard seen.insert(tag).inserted else {
                throw AndroidKeyDescriptionError(.duplicateTag, "tag [\(tag)] appears more than once")
            }
            if let previousTag, tag < previousTag {
                list.tagsInAscendingOrder = false
            }
            previousTag = tag
            try list.decodeElement(tag: tag, value: value)
        }
        return list
    }

    private mutating func decodeElement(tag: UInt, value: ASN1Node) throws {
        typealias Tag = Self.Tag
        do {
            switch tag {
            case Tag.purpose: self.purpose = try Self.integerSet(value)
            case Tag.algorithm: self.algorithm = try Int(derEncoded: value)
            case Tag.keySize: self.keySize = try Int(derEncoded: value)
            case Tag.digest: self.digest = try Self.integerSet(value)
            case Tag.padding: self.padding = try Self.integerSet(value)
            case Tag.ecCurve: self.ecCurve = try Int(derEncoded: value)
            case Tag.noAuthRequired:
                _ = try ASN1Null(derEncoded: value)
                self.noAuthRequired = true
            case Tag.creationDateTime: self.creationDateTime = try Int(derEncoded: value)
            case Tag.origin: self.origin = try Int(derEncoded: value)
            case Tag.rootOfTrust: self.rootOfTrust = try AndroidKeyDescription.RootOfTrust.decode(value)
            case Tag.osVersion: self.osVersion = try Int(derEncoded: value)
            case Tag.osPatchLevel: self.osPatchLevel = try Int(derEncoded: value)
            case Tag.attestationApplicationId:
                let octets = try ASN1OctetString(derEncoded: value)
                self.attestationApplicationId = try AndroidKeyDescription.AttestationApplicationId.decode(
                    contentOf: octets.bytes
                )
            case Tag.vendorPatchLevel: self.vendorPatchLevel = try Int(derEncoded: value)
            case Tag.bootPatchLevel: self.bootPatchLevel = try Int(derEncoded: value)
            case Tag.moduleHash: self.moduleHash = Array(try ASN1OctetString(derEncoded: value).bytes)
            default:
                // Already validated as DER by DER.parse; kept verbatim for re-encoding.
                self.otherElements.append(
                    AndroidKeyDescription.UnknownAuthorization(tag: tag, value: Array(value.encodedBytes))
                )
            }
        } catch let error as AndroidKeyDescriptionError {
            throw error
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "AuthorizationList tag [\(tag)]: \(error)")
        }
    }

    private static func integerSet(_ node: ASN1Node) throws -> Set<Int> {
        try DER.sequence(node, identifier: .set) { nodes in
            var result = Set<Int>()
            while let element = nodes.next() {
                result.insert(try Int(derEncoded: element))
            }
            return result
        }
    }
}
