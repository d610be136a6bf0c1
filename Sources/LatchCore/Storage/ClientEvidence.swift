import Foundation
import LatchModel

/// An app's device-evidence and browser sign-in settings, stored with its client as JSON. Secrets (the DeviceCheck private key, the
/// Play Integrity decryption key) are sealed with the deployment's key-encryption key before they get here and are
/// never returned by the admin API.
public struct ClientEvidence: Codable, Sendable, Hashable {
    public var ios: IOS?
    public var android: Android?
    /// Token binding (RFC 9449); nil is ``DPoPPolicy/default``.
    public var dpop: DPoPPolicy?
    /// Browser sign-in through upstream identity providers (the authorization endpoint); nil allows none.
    public var federation: Federation?
    /// The algorithm of the client's ID tokens, `ES256` or `RS256` (OpenID Connect Dynamic Client Registration 1.0 §2
    /// `id_token_signed_response_alg`); nil: the deployment's (`keys.algorithm`).
    public var idTokenSignedResponseAlg: String?

    public init(
        ios: IOS? = nil, android: Android? = nil, dpop: DPoPPolicy? = nil, federation: Federation? = nil, idTokenSignedResponseAlg: String? = nil
    ) {
        self.ios = ios
        self.android = android
        self.dpop = dpop
        self.federation = federation
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
    }

    /// Where the authorization endpoint may send the app's browser back, and which upstreams it may use.
    public struct Federation: Codable, Sendable, Hashable {
        /// Redirect URIs, matched exactly (RFC 9700 §2.1); a loopback `http://127.0.0.1/…` or `http://[::1]/…` one
        /// matches with any port (RFC 8252 §7.3).
        public var redirectUris: [String]
        /// Where RP-initiated logout may send the browser afterwards, matched exactly.
        public var postLogoutRedirectUris: [String]
        /// Upstream identity provider ids, in the order the chooser shows them.
        public var upstreamIdps: [String]

        public init(redirectUris: [String] = [], postLogoutRedirectUris: [String] = [], upstreamIdps: [String] = []) {
            self.redirectUris = redirectUris
            self.postLogoutRedirectUris = postLogoutRedirectUris
            self.upstreamIdps = upstreamIdps
        }
    }

    /// Apple platforms.
    public struct IOS: Codable, Sendable, Hashable {
        /// `TEAMID.bundleId`.
        public var appIds: [String]
        /// `production` or `development`: the App Attest environment the app is built with.
        public var appAttestEnvironment: String
        public var deviceCheck: DeviceCheck?

        public init(appIds: [String], appAttestEnvironment: String, deviceCheck: DeviceCheck? = nil) {
            self.appIds = appIds
            self.appAttestEnvironment = appAttestEnvironment
            self.deviceCheck = deviceCheck
        }
    }

    /// DeviceCheck API credentials: the team, the key id and the sealed `.p8` private key.
    public struct DeviceCheck: Codable, Sendable, Hashable {
        public var teamId: String
        public var keyId: String
        /// Base64 of the sealed PEM.
        public var sealedPrivateKey: String

        public init(teamId: String, keyId: String, sealedPrivateKey: String) {
            self.teamId = teamId
            self.keyId = keyId
            self.sealedPrivateKey = sealedPrivateKey
        }
    }

    /// Android.
    public struct Android: Codable, Sendable, Hashable {
        public var packageNames: [String]
        public var playIntegrity: PlayIntegrity?
        /// `binding` (SHA-256 of the challenge and the key) or `deviceId` (the Sudo SDK's form).
        public var requestHashMode: String

        public init(packageNames: [String], playIntegrity: PlayIntegrity? = nil, requestHashMode: String = "binding") {
            self.packageNames = packageNames
            self.playIntegrity = playIntegrity
            self.requestHashMode = requestHashMode
        }
    }

    /// Play Integrity keys from the Play Console.
    public struct PlayIntegrity: Codable, Sendable, Hashable {
        /// Base64 of the sealed 32-byte AES key.
        public var sealedDecryptionKey: String
        /// Base64 of the verification key's SPKI DER (public).
        public var verificationKey: String

        public init(sealedDecryptionKey: String, verificationKey: String) {
            self.sealedDecryptionKey = sealedDecryptionKey
            self.verificationKey = verificationKey
        }
    }

    /// The stored form (canonical JSON; empty settings are `{}`).
    public var storedText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and arrays cannot fail.
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }

    /// Reads the stored form; unreadable text is a store failure (never silently empty settings).
    public static func stored(_ text: String) throws -> ClientEvidence {
        do {
            return try JSONDecoder().decode(ClientEvidence.self, from: Data(text.utf8))
        } catch {
            throw StoredForm.unreadable("clients.evidence", String(text.prefix(40)))
        }
    }
}
