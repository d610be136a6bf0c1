import Foundation
import LatchAttestation
import LatchModel

extension FidoService {
    /// `GET /.well-known/apple-app-site-association`: the registered iOS apps (`TEAMID.bundleId`) may use this domain's
    /// passkeys (`webcredentials`, which iOS requires of an app using the relying party id) and open its
    /// out-of-band links (`applinks`, path `/open`). Served from the issuer's host, which is the default relying
    /// party id.
    public func appleAppSiteAssociation() async throws -> JSONValue {
        let appIDs = Array(Set(try await apps?.snapshot().appAttest.map(\.appID) ?? [])).sorted()
        let ids: JSONValue = .array(appIDs.map(JSONValue.string))
        return .object([
            "applinks": .object([
                "details": .array(appIDs.isEmpty ? [] : [.object(["appIDs": ids, "components": .array([.object(["/": "/open", "comment": "out-of-band links"])])])])
            ]),
            "webcredentials": .object(["apps": ids]),
        ])
    }

    /// `GET /.well-known/assetlinks.json` (Digital Asset Links): each registered Android package, with its client's
    /// signing-certificate fingerprints, may use this domain's credentials (`get_login_creds`, what Android's
    /// Credential Manager checks for passkeys) and handle its links (`handle_all_urls`).
    public func assetLinks() async throws -> JSONValue {
        guard let snapshot = try await apps?.snapshot() else { return .array([]) }
        let statements: [JSONValue] = snapshot.android.keys.sorted().compactMap { package in
            guard let client = snapshot.android[package]?.clientID, let digests = snapshot.signingCertificates[client], !digests.isEmpty else { return nil }
            let fingerprints = digests.map { digest in digest.map { String(format: "%02X", $0) }.joined(separator: ":") }.sorted()
            return .object([
                "relation": ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"],
                "target": .object([
                    "namespace": "android_app", "package_name": .string(package), "sha256_cert_fingerprints": .array(fingerprints.map(JSONValue.string)),
                ]),
            ])
        }
        return .array(statements)
    }
}
