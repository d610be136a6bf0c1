import Configuration
import Foundation
import LatchCore
import LatchJOSE
import Logging
import LatchModel

/// Every setting of a Latch deployment, in one place.
///
/// Sources, strongest first: `latch serve` flags; environment variables (`LATCH_` + the key in upper snake
/// case: `tokens.refreshGrace` → `LATCH_TOKENS_REFRESH_GRACE`); the JSON file given with `--config`
/// (nested objects: `{"tokens": {"refreshGrace": 10}}`); the defaults below. The secrets `admin.token`,
/// `keys.encryptionKey` and `database.url` may instead come from the file a `_FILE` variable names
/// (`LATCH_ADMIN_TOKEN_FILE`; ``secretFileKeys``).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `http.host` | `127.0.0.1` | address to listen on (`--host`) |
/// | `http.port` | `8080` | port to listen on (`--port`) |
/// | `http.idleTimeout` | `60` | seconds an idle keep-alive connection stays open |
/// | `http.headerTimeout` | `10` | seconds a request head may take (from the connection's start or the request's first byte) |
/// | `http.bodyTimeout` | `30` | seconds a request body may take after its head |
/// | `http.maxConnections` | `4096` | connections open at once (held under the descriptor limit) |
/// | `data.dir` | `./latch-data` | folder of the SQLite database and the key-encryption key (`--data-dir`) |
/// | `database.url` | none: SQLite in `data.dir` | `postgres://user:password@host:port/db`: the scale-out store (`--database`) |
/// | `database.poolSize` | `16` | PostgreSQL connections per replica |
/// | `database.timeout` | `5` | seconds a PostgreSQL operation may take before the request answers 503 |
/// | `issuer` | `http://localhost:<port>` (`http://<host>:<port>` for another host) | public base URL; the `iss` of every token |
/// | `keys.algorithm` | `ES256` | algorithm of newly generated signing keys (`ES256` or `RS256`) |
/// | `keys.encryptionKey` | file `<data.dir>/master.key` | base64 of the 32-byte key sealing signing keys at rest; every replica needs the same |
/// | `tokens.accessLifetime` | `3600` | access-token lifetime, s |
/// | `tokens.idLifetime` | `3600` | ID-token lifetime, s |
/// | `tokens.refreshLifetime` | `2592000` | absolute refresh-family lifetime, s (30 days) |
/// | `tokens.refreshGrace` | `10` | retry window for a rotated refresh token whose successor is unused, s |
/// | `tokens.accessAudience` | the issuer | `aud` of access tokens |
/// | `assertions.audience` | `identity-service` | `aud` of custom federated and device assertions |
/// | `assertions.clockSkew` | `60` | allowed clock difference, s |
/// | `assertions.maxLifetime` | `3600` | default cap on a federated assertion's `exp - iat`, s |
/// | `assertions.deviceMaxLifetime` | `600` | cap on a device assertion's `exp - iat`, s |
/// | `signIn.nonceLifetime` | `300` | sign-in nonce lifetime, s |
/// | `registration.testKeys` | `true` | accept test registration keys (`false` in production) |
/// | `attestation.challengeLifetime` | `300` | registration challenge lifetime, s |
/// | `attestation.appAttestRoots` | Apple's App Attest root (built in) | PEM file of the roots App Attest chains must end at |
/// | `attestation.androidKeyRoots` | Google's hardware attestation roots (built in) | PEM file of the roots Android key attestation chains must end at |
/// | `attestation.testRoot` | none | PEM file of a test attestation root (`latch admin attestation test-root create`), trusted only while `registration.testKeys` is on |
/// | `attestation.deviceCheckURL` | `https://api.devicecheck.apple.com` | Apple's DeviceCheck API for release builds |
/// | `attestation.deviceCheckDevelopmentURL` | `https://api.development.devicecheck.apple.com` | Apple's DeviceCheck API for debug builds |
/// | `attestation.deviceCheckTimeout` | `5` | seconds a DeviceCheck call may take before the registration answers 503 |
/// | `attestation.androidMinSecurityLevel` | `tee` | least Android key attestation security level: `software`, `tee` or `strongbox` |
/// | `attestation.androidRequireVerifiedBoot` | `true` | Android key attestation requires a verified boot and a locked bootloader |
/// | `attestation.androidStatusList` | none | JSON file of Google's attestation status list (revoked serials), refreshed by the operator |
/// | `attestation.playIntegrityFreshness` | `300` | how old a Play Integrity verdict may be, s |
/// | `attestation.playIntegrityDeviceVerdict` | `device` | least Play Integrity device verdict: `basic`, `device` or `strong` |
/// | `attestation.playIntegrityRequireRecognized` | `true` | Play Integrity requires `PLAY_RECOGNIZED` |
/// | `attestation.playIntegrityRequireLicensed` | `false` | Play Integrity requires `LICENSED` |
/// | `fido.rpId` | the issuer's host | WebAuthn relying party id |
/// | `fido.origins` | the issuer's origin | accepted WebAuthn origins, comma-separated (web origins and `android:apk-key-hash:…`) |
/// | `fido.requireUserVerification` | `false` | require the UV flag (user verification `required`) |
/// | `fido.requireAttestation` | `false` | require an attestation chaining to a trust anchor at registration |
/// | `fido.allowedAaguids` | (any) | authenticator models accepted, comma-separated AAGUIDs (32 hex digits, dashes allowed) |
/// | `fido.deniedAaguids` | (none) | authenticator models refused at registration and sign-in |
/// | `fido.maxAuthenticatorsPerUser` | `10` | authenticators one user may register |
/// | `fido.trustAnchors` | (none) | folder of `<aaguid>.pem` roots per authenticator model; `default.pem` for the others |
/// | `fido.metadataBlob` | (none) | a FIDO MDS3 BLOB file (`blob.jwt`), verified offline at start |
/// | `fido.metadataRoots` | GlobalSign Root CA - R3 | PEM roots the MDS3 BLOB's signer must chain to |
/// | `oob.tokenLifetime` | `600` | seconds an out-of-band token can be redeemed (60–86400) |
/// | `fido.signUp` | `true` | passwordless sign-up (`POST /v1/fido/sign-up/options`, registration type `WEBAUTHN`) |
/// | `fido.pin.minLength` / `fido.pin.maxLength` | `6` / `6` | PIN length the SDK enforces (one given alone moves the other's default) |
/// | `fido.pin.maxAttempts` | `5` | wrong PINs before a PIN authenticator locks |
/// | `fido.pin.coolDowns` | `0,10,30,60` | seconds to wait after the 1st, 2nd, … wrong PIN (the last repeats) |
/// | `fido.pin.unboundCoolDowns` | `0,10,30,60,300,900,3600` | an unbound PIN authenticator's cool-downs (it never locks) |
/// | `sensitive.maxAgeSeconds` | `300` | how recent a sign-in sensitive operations need, s |
/// | `login.validity` | `3600` | seconds an issuer-login session lasts (60–604800) |
/// | `login.sensitiveMaxAge` | `300` | how recent an issuer login sensitive operations need, s (1–86400) |
/// | `login.refreshBeyondValidity` | `false` | let issuer-login sessions refresh past `login.validity` (up to `tokens.refreshLifetime`) |
/// | `hooks.allowPrivateAddresses` | `false` | let custom-registration hooks be on loopback or private addresses (SSRF guard off) |
/// | `dpop.requireNonce` | `false` | DPoP proofs must carry the server's nonce (RFC 9449 §8) |
/// | `metrics.enabled` | `true` | Prometheus metrics at `GET /metrics` (any admin token) |
/// | `metrics.port` | `0` (none) | a second listener serving `GET /metrics` without authentication (0–65535) |
/// | `metrics.host` | `127.0.0.1` | the address `metrics.port` listens on |
/// | `tracing.enabled` | `false` | export spans over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (needs a build with `--traits OTel`) |
/// | `tracing.serviceName` | `latch` | the `service.name` of the exported spans |
/// | `production` | `false` | refuse to start in development mode: without a configured `issuer`, with `registration.testKeys` on, with an `attestation.testRoot`, or with a plain-http issuer on a non-loopback host |
/// | `federation.webSessionLifetime` | `3600` | seconds a browser stays signed in at the hosted pages (60–86400) |
/// | `federation.upstreamTimeout` | `10` | seconds a call to an upstream identity provider may take (1–60) |
/// | `audit.retentionDays` | `365` | days audit records are kept before housekeeping purges them (0–3650; 0 keeps them forever) |
/// | `admin.token` | generated, printed once | the bootstrap admin token (stored hashed) |
/// | `clients.default` | `default` | client id used when a request names none |
/// | `log.level` | `info` | `trace` … `critical` |
/// | `log.format` | `text` | `text`, or `json`: one JSON object per line with the request id |
/// | `housekeeping.interval` | `60` | seconds between purges of expired rows and key reloads |
/// | `rateLimit.perMinute` | `600` | requests a minute per client address to the token, registration and challenge endpoints (0: off) |
/// | `rateLimit.trustForwardedFor` | `false` | take the client address from `X-Forwarded-For` (only behind trusted proxies) |
/// | `rateLimit.trustedHops` | `1` | trusted proxies in front of Latch: the client is the address this many entries from the right of `X-Forwarded-For` |
/// | `rateLimit.adminFailuresPerMinute` | `30` | failed admin authentications a minute per address before 429 (0: off) |
public struct LatchConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Seconds an idle keep-alive connection stays open.
    public var idleTimeout: Int64 = 60
    /// Seconds a request head may take to arrive (from the connection's start or the request's first byte).
    public var headerTimeout: Int64 = 10
    /// Seconds a request body may take to arrive after its head.
    public var bodyTimeout: Int64 = 30
    /// Connections open at once (held under the descriptor limit).
    public var maxConnections = 4096
    public var dataDirectory = "./latch-data"
    /// A PostgreSQL URL (it may hold a password); nil means SQLite in `dataDirectory`.
    public var databaseURL: Redacted<String>?
    public var databasePoolSize = 16
    /// Seconds before a PostgreSQL operation is given up (503).
    public var databaseTimeout: Int64 = 5
    public var issuer: String?
    /// Refuse to start with any of ``developmentModeSettings`` (`production`).
    public var production = false
    public var signingAlgorithm: JWSAlgorithm = .ES256
    /// 32 bytes; when nil, read from (or created in) `<dataDirectory>/master.key`.
    public var keyEncryptionKey: Redacted<[UInt8]>?
    public var tokens: TokenSettingsOverrides = .init()
    public var assertions = AssertionSettings()
    public var registration = RegistrationSettings()
    public var sensitiveMaxAge: Int64 = 300
    /// Issuer logins (`login.*`).
    public var issuerLogin = IssuerLoginSettings()
    /// Custom-registration hooks may be on loopback and private addresses.
    public var hooksAllowPrivateAddresses = false
    /// DPoP proofs must carry the server's nonce (`dpop.requireNonce`).
    public var dpopRequireNonce = false
    /// Prometheus metrics at `GET /metrics` (`metrics.enabled`).
    public var metricsEnabled = true
    /// A second listener serving `GET /metrics` without authentication (`metrics.port`; 0: none) on `metrics.host`.
    public var metricsPort = 0
    public var metricsHost = "127.0.0.1"
    /// Export spans over OTLP (`tracing.enabled`).
    public var tracingEnabled = false
    /// The exported spans' `service.name` (`tracing.serviceName`).
    public var tracingServiceName = "latch"
    /// Days audit records are kept (`audit.retentionDays`; 0 keeps them forever).
    public var auditRetentionDays: Int64 = 365
    /// Browser sign-in through upstream identity providers (`federation.*`).
    public var federation = FederationSettings()
    public var fidoRPID: String?
    public var fidoOrigins: [String] = []
    public var fidoRequireUserVerification = false
    public var fidoRequireAttestation = false
    public var fidoAllowedAAGUIDs: Set<String> = []
    public var fidoDeniedAAGUIDs: Set<String> = []
    public var fidoMaxAuthenticatorsPerUser: Int64 = 10
    public var fidoSignUp = true
    public var oobTokenLifetime: Int64 = 600
    public var fidoTrustAnchorsFolder: String?
    public var fidoMetadataBlobFile: String?
    public var fidoMetadataRootsFile: String?
    public var fidoPin = PinPolicy()
    /// Seconds a registration challenge stays valid.
    public var attestationChallengeLifetime: Int64 = 300
    /// PEM files overriding the built-in attestation roots, and the test root (trusted only with test keys on).
    public var appAttestRootsFile: String?
    public var androidKeyRootsFile: String?
    public var testAttestationRootFile: String?
    public var deviceCheckURL = "https://api.devicecheck.apple.com"
    public var deviceCheckDevelopmentURL = "https://api.development.devicecheck.apple.com"
    public var deviceCheckTimeout: Int64 = 5
    /// `software`, `tee` or `strongbox`.
    public var androidMinSecurityLevel = "tee"
    public var androidRequireVerifiedBoot = true
    public var androidStatusListFile: String?
    public var playIntegrityFreshness: Int64 = 300
    /// `basic`, `device` or `strong`.
    public var playIntegrityDeviceVerdict = "device"
    public var playIntegrityRequireRecognized = true
    public var playIntegrityRequireLicensed = false
    public var adminToken: Redacted<String>?
    public var defaultClientID = "default"
    public var logLevel: Logger.Level = .info
    /// `text` (swift-log's stream format) or `json` (one object per line, ``JSONLogHandler``): `log.format`.
    public var logFormat: LogFormat = .text

    public enum LogFormat: String, Sendable {
        case text, json
    }
    public var housekeepingInterval: Int = 60
    /// Requests a minute per client address on unauthenticated endpoints; 0 turns limiting off.
    public var rateLimitPerMinute = 600
    public var trustForwardedFor = false
    /// With `trustForwardedFor`: trusted proxies in front of Latch; the client is this many entries from the right.
    public var trustedHops = 1
    /// Failed admin authentications a minute per address before 429; 0 turns the limit off.
    public var adminFailuresPerMinute = 30

    /// Token settings that do not depend on the issuer URL.
    public struct TokenSettingsOverrides: Sendable {
        public var accessLifetime: Int64 = 3600
        public var idLifetime: Int64 = 3600
        public var refreshLifetime: Int64 = 30 * 24 * 3600
        public var refreshGrace: Int64 = 10
        public var accessAudience: String?
        public init() {}
    }

    public init() {}

    /// What makes this a development deployment, one phrase each: no configured issuer, test registration keys on, an
    /// attestation test root, a plain-http issuer on a host other than loopback. Empty for a production configuration.
    public var developmentModeSettings: [String] {
        var found: [String] = []
        if issuer == nil { found.append("no issuer is configured (tokens name \(issuerURL))") }
        if registration.testKeysEnabled { found.append("test registration keys are on (registration.testKeys)") }
        if testAttestationRootFile != nil { found.append("an attestation test root is trusted (attestation.testRoot)") }
        if let url = URL(string: issuerURL), url.scheme == "http", let host = url.host, !Self.isLoopback(host) {
            found.append("the issuer \(issuerURL) is plain http on a host other than loopback")
        }
        return found
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Refuses a `production` configuration with any development-mode setting, naming them all.
    public func checkProduction() throws {
        let found = developmentModeSettings
        guard production, !found.isEmpty else { return }
        throw ConfigurationError(
            key: "production", problem: "refuses to start in development mode: " + found.joined(separator: "; ")
                + " (docs/configuration.md#production)")
    }

    /// The effective issuer URL: the configured `issuer`, else `http://localhost:<port>` when listening on loopback
    /// or on every address (browsers take passkeys for `localhost`, never for an IP address), else
    /// `http://<host>:<port>`. With port 0, `latch serve` picks the free port before this is read.
    public var issuerURL: String {
        if let issuer { return issuer }
        let name = Self.isLoopback(host) || ["0.0.0.0", "::", "[::]"].contains(host) ? "localhost" : host
        return "http://\(name.contains(":") && !name.hasPrefix("[") ? "[\(name)]" : name):\(port)"
    }

    /// The WebAuthn relying party: the issuer's host and origin unless configured.
    public var fidoSettings: FidoSettings {
        var settings = FidoSettings.defaults(issuer: issuerURL)
        if let fidoRPID { settings.rpID = fidoRPID }
        if !fidoOrigins.isEmpty { settings.origins = Set(fidoOrigins) }
        settings.requireUserVerification = fidoRequireUserVerification
        settings.requireTrustedAttestation = fidoRequireAttestation
        settings.allowedAAGUIDs = fidoAllowedAAGUIDs
        settings.deniedAAGUIDs = fidoDeniedAAGUIDs
        settings.maximumAuthenticatorsPerUser = Int(fidoMaxAuthenticatorsPerUser)
        settings.signUpEnabled = fidoSignUp
        settings.pin = fidoPin
        return settings
    }

    /// The engines' token settings.
    public var tokenSettings: TokenSettings {
        var settings = TokenSettings(issuer: issuerURL, accessTokenAudience: tokens.accessAudience)
        settings.accessTokenLifetime = tokens.accessLifetime
        settings.idTokenLifetime = tokens.idLifetime
        settings.refreshFamilyLifetime = tokens.refreshLifetime
        settings.refreshGrace = tokens.refreshGrace
        return settings
    }

    /// The accepted range of every numeric setting (docs/configuration.md states each). Lifetimes stay far from
    /// `Int64` overflow, so no time computed from them can trap.
    public static let ranges: [String: ClosedRange<Int64>] = [
        "http.port": 0...65_535, "http.idleTimeout": 1...3_600, "http.headerTimeout": 1...300, "http.bodyTimeout": 1...600,
        "http.maxConnections": 16...1_000_000, "database.poolSize": 1...512, "database.timeout": 1...600,
        "tokens.accessLifetime": 1...86_400, "tokens.idLifetime": 1...86_400, "tokens.refreshLifetime": 60...31_622_400,
        "tokens.refreshGrace": 0...3_600, "assertions.clockSkew": 0...600, "assertions.maxLifetime": 1...86_400,
        "assertions.deviceMaxLifetime": 1...3_600, "signIn.nonceLifetime": 1...3_600, "sensitive.maxAgeSeconds": 1...86_400,
        "housekeeping.interval": 1...86_400, "rateLimit.perMinute": 0...1_000_000, "rateLimit.trustedHops": 1...10,
        "rateLimit.adminFailuresPerMinute": 0...10_000, "attestation.challengeLifetime": 30...3_600,
        "attestation.playIntegrityFreshness": 10...86_400, "attestation.deviceCheckTimeout": 1...60,
        "fido.maxAuthenticatorsPerUser": 1...100, "fido.pin.minLength": 4...64, "fido.pin.maxLength": 4...64, "fido.pin.maxAttempts": 1...20,
        "oob.tokenLifetime": 60...86_400, "login.validity": 60...604_800, "login.sensitiveMaxAge": 1...86_400,
        "federation.webSessionLifetime": 60...86_400, "federation.upstreamTimeout": 1...60, "metrics.port": 0...65_535,
        "audit.retentionDays": 0...3_650,
    ]

    /// Comma-separated AAGUIDs: 32 hex digits each (dashes allowed), kept as lower-case hex.
    static func aaguids(_ text: String?, key: String) throws -> Set<String> {
        var result: Set<String> = []
        for item in (text ?? "").split(separator: ",") {
            let hex = item.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "-", with: "").lowercased()
            guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else {
                throw ConfigurationError(key: key, problem: "must be comma-separated AAGUIDs (32 hex digits, dashes allowed): \(item.prefix(40))")
            }
            result.insert(hex)
        }
        return result
    }

    /// Why `issuer` cannot be an OpenID issuer identifier (OpenID Connect Discovery 1.0 §2: an `https` URL — `http`
    /// is allowed for local use — with a host, no query and no fragment), or nil when it can.
    static func issuerProblem(_ issuer: String) -> String? {
        guard issuer.utf8.count <= 512 else { return "must be at most 512 characters" }
        guard !issuer.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) else {
            return "must be a URL without spaces, control or non-ASCII characters (percent-encode them)"
        }
        guard let url = URLComponents(string: issuer), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            return "must be an absolute http(s) URL, like https://id.example.com"
        }
        guard let host = url.host, !host.isEmpty else { return "must name a host" }
        guard url.query == nil, url.fragment == nil else { return "must not have a query (?) or a fragment (#)" }
        guard url.user == nil, url.password == nil else { return "must not hold a user name or password" }
        guard !issuer.hasSuffix("/") else { return "must not end with / (the discovery document is at <issuer>/.well-known/openid-configuration)" }
        return nil
    }

    /// Why `token` cannot be the admin token, or nil when it can: 16–512 characters of the RFC 6750 `b64token`
    /// alphabet, so that it can travel in an `Authorization: Bearer` header unchanged.
    static func adminTokenProblem(_ token: String) -> String? {
        guard (16...512).contains(token.utf8.count) else { return "must be 16–512 characters, not \(token.utf8.count)" }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=".utf8)
        guard token.utf8.allSatisfy(allowed.contains), token.utf8.first != UInt8(ascii: "=") else {
            return "must be letters, digits and - . _ ~ + / (a bearer token, RFC 6750 §2.1; e.g. openssl rand -base64 32)"
        }
        return nil
    }

    /// Every key a deployment reads (the table above); a configuration file naming another is refused.
    public static let keys: [String] = [
        "http.host", "http.port", "http.idleTimeout", "http.headerTimeout", "http.bodyTimeout", "http.maxConnections", "data.dir", "database.url", "database.poolSize", "database.timeout", "issuer", "keys.algorithm",
        "keys.encryptionKey", "tokens.accessLifetime", "tokens.idLifetime", "tokens.refreshLifetime", "tokens.refreshGrace",
        "tokens.accessAudience", "assertions.audience", "assertions.clockSkew", "assertions.maxLifetime", "assertions.deviceMaxLifetime",
        "signIn.nonceLifetime", "registration.testKeys", "sensitive.maxAgeSeconds", "admin.token", "clients.default", "log.level", "log.format",
        "housekeeping.interval", "rateLimit.perMinute", "rateLimit.trustForwardedFor", "rateLimit.trustedHops", "rateLimit.adminFailuresPerMinute",
        "attestation.challengeLifetime", "attestation.appAttestRoots", "attestation.androidKeyRoots", "attestation.testRoot",
        "attestation.deviceCheckURL", "attestation.deviceCheckDevelopmentURL", "attestation.deviceCheckTimeout",
        "attestation.androidMinSecurityLevel", "attestation.androidRequireVerifiedBoot", "attestation.androidStatusList",
        "attestation.playIntegrityFreshness", "attestation.playIntegrityDeviceVerdict", "attestation.playIntegrityRequireRecognized",
        "attestation.playIntegrityRequireLicensed", "fido.rpId", "fido.origins", "fido.requireUserVerification",
        "fido.requireAttestation", "fido.allowedAaguids", "fido.deniedAaguids", "fido.maxAuthenticatorsPerUser", "oob.tokenLifetime", "fido.signUp", "fido.trustAnchors", "fido.metadataBlob", "fido.metadataRoots", "fido.pin.minLength",
        "fido.pin.maxLength", "fido.pin.maxAttempts", "fido.pin.coolDowns", "fido.pin.unboundCoolDowns", "login.validity", "login.sensitiveMaxAge",
        "login.refreshBeyondValidity", "hooks.allowPrivateAddresses", "dpop.requireNonce", "federation.webSessionLifetime",
        "federation.upstreamTimeout", "metrics.enabled", "metrics.port", "metrics.host", "audit.retentionDays",
        "tracing.enabled", "tracing.serviceName", "production",
    ]

    /// Reads the configuration as `latch serve` does — flags, then `LATCH_*` environment variables, then the JSON file —
    /// and refuses, naming the key and where its value came from: a value of the wrong type, a value out of range,
    /// and a key in the file that Latch does not read (a misspelling would otherwise be ignored).
    public static func load(
        overrides: [String: ConfigContent], environment: [String: String] = ProcessInfo.processInfo.environment, configFile: String?
    ) async throws -> LatchConfiguration {
        try checkEnvironment(environment)
        if let configFile { try checkFileKeys(configFile) }
        let audit = ConfigurationAudit(configFile: configFile)
        let configuration: LatchConfiguration
        do {
            configuration = try LatchConfiguration(reader: try await reader(overrides: overrides, environment: environment, configFile: configFile, audit: audit))
        } catch var error as ConfigurationError {
            error.source = audit.source(of: error.key) ?? error.source
            throw audit.firstUnconvertible() ?? error
        }
        if let error = audit.firstUnconvertible() { throw error }
        return configuration
    }

    /// `LATCH_*` names that are not settings of `latch serve` but that Latch's own tools read: the CLI's client
    /// commands and the SDK examples (`LATCH_SERVER`), the resource-server library's examples, and the test suite. A
    /// server started from a shell or a test that sets them must not stop for them.
    public static let otherEnvironmentNames: Set<String> = [
        // The CLI's `latch device` / `latch admin` commands and the SDK examples.
        "LATCH_SERVER",
        // The resource-server library's examples (docs/resource-servers).
        "LATCH_AUDIENCE", "LATCH_JWKS_URL", "LATCH_JWKS_TIMEOUT", "LATCH_INTROSPECTION_CLIENT_ID", "LATCH_INTROSPECTION_CLIENT_SECRET",
        // The test suite and CI (scripts/test.sh, .ci/run).
        "LATCH_CI", "LATCH_REQUIRE_POSTGRES", "LATCH_RELEASE_CHECK", "LATCH_UPDATE_SCREENSHOTS", "LATCH_QR_ALLOW_NO_ZBAR",
        "LATCH_TEST_POSTGRES_URL", "LATCH_TEST_OUTAGE_POSTGRES_URL", "LATCH_TEST_PG_CTL", "LATCH_TEST_POSTGRES_CA", "LATCH_TEST_KEY_ID", "LATCH_TEST_LOG_LEVEL",
    ]

    /// Every `LATCH_*` environment variable name Latch knows: one per setting, the `_FILE` name of each secret
    /// (``secretFileKeys``), and ``otherEnvironmentNames``.
    public static var knownEnvironmentNames: Set<String> {
        Set(keys.map(ConfigurationAudit.environmentName)).union(secretFileKeys.map(secretFileEnvironmentName)).union(otherEnvironmentNames)
    }

    /// The secrets that can be handed over as a file instead of a value: `LATCH_ADMIN_TOKEN_FILE=/run/credentials/…`
    /// reads `admin.token` from that file (its content, surrounding whitespace and newlines ignored). For systemd's
    /// `LoadCredential` and container secrets, which give files, so the secret stays out of the process environment
    /// and out of unit files. Setting both the variable and its `_FILE` variant is refused.
    public static let secretFileKeys = ["admin.token", "keys.encryptionKey", "database.url"]

    /// `admin.token` → `LATCH_ADMIN_TOKEN_FILE`.
    public static func secretFileEnvironmentName(_ key: String) -> String { ConfigurationAudit.environmentName(key) + "_FILE" }

    /// The values of the secrets named by `LATCH_*_FILE` variables, by key; refuses a file that cannot be read or is
    /// empty, and a secret given both ways.
    static func secretFileValues(_ environment: [String: String]) throws -> [String: String] {
        var values: [String: String] = [:]
        for key in secretFileKeys {
            let name = secretFileEnvironmentName(key)
            guard let path = environment[name] else { continue }
            let source = "environment variable \(name)"
            if environment[ConfigurationAudit.environmentName(key)] != nil {
                throw ConfigurationError(
                    key: key, source: source, problem: "is set together with \(ConfigurationAudit.environmentName(key)): keep one of them")
            }
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(key: key, source: source, problem: "names \(path), which cannot be read: check the path and its permissions")
            }
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !value.isEmpty else { throw ConfigurationError(key: key, source: source, problem: "names \(path), which is empty") }
            values[key] = value
        }
        return values
    }

    /// Refuses a `LATCH_*` environment variable Latch does not know, naming the closest known one: a misspelled name
    /// (one letter off the test-keys switch, say) would otherwise be ignored and leave test keys on.
    static func checkEnvironment(_ environment: [String: String]) throws {
        let known = knownEnvironmentNames
        for name in environment.keys.sorted() where name.hasPrefix("LATCH_") && !known.contains(name) {
            let closest = known.min { (editDistance(name, $0), $0) < (editDistance(name, $1), $1) }
            throw ConfigurationError(
                key: name, source: "environment variable",
                problem: "is not a Latch setting" + (closest.map { "; did you mean \($0)?" } ?? "") + " (see docs/configuration.md)")
        }
    }

    /// Levenshtein distance between two names (bytes; names are ASCII).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8.prefix(200))
        let b = Array(b.utf8.prefix(200))
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...max(a.count, 1) where !a.isEmpty {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return a.isEmpty ? b.count : previous[b.count]
    }

    /// Refuses a configuration file that is not a JSON object of known keys.
    static func checkFileKeys(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: "--config", source: path, problem: "cannot be read: check the path and its permissions")
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(data)
        } catch {
            // Where, as an editor shows it: a trailing comma or a comment is the usual culprit.
            let before = data.prefix(error.offset)
            let line = before.count { $0 == UInt8(ascii: "\n") } + 1
            let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { before.distance(from: before.startIndex, to: $0) + 1 } ?? 0) + 1
            throw ConfigurationError(
                key: "--config", source: path,
                problem: "is not valid JSON: \(error.reason) at line \(line), column \(column) (JSON allows no trailing commas or comments)")
        }
        guard case .object(let root) = parsed else {
            throw ConfigurationError(key: "--config", source: path, problem: "is not a JSON object (keys as in docs/configuration.md)")
        }
        func walk(_ object: [String: JSONValue], prefix: String) throws {
            for (name, value) in object.sorted(by: { $0.key < $1.key }) {
                let key = prefix.isEmpty ? name : prefix + "." + name
                if case .object(let nested) = value, !keys.contains(key) {
                    guard keys.contains(where: { $0.hasPrefix(key + ".") }) else {
                        throw ConfigurationError(key: key, source: "file \(path)", problem: "is not a Latch setting (see docs/configuration.md)")
                    }
                    try walk(nested, prefix: key)
                } else if !keys.contains(key) {
                    throw ConfigurationError(key: key, source: "file \(path)", problem: "is not a Latch setting (see docs/configuration.md)")
                }
            }
        }
        try walk(root, prefix: "")
    }

    /// The reader `latch serve` uses: `overrides` (flags), then secrets read from the files that `LATCH_*_FILE`
    /// variables name (``secretFileKeys``), then `LATCH_*` environment variables, then the JSON file at `configFile`
    /// (when given), then defaults.
    public static func reader(
        overrides: [String: ConfigContent], environment: [String: String] = ProcessInfo.processInfo.environment,
        configFile: String?, audit: (any AccessReporter)? = nil
    ) async throws -> ConfigReader {
        var providers: [any ConfigProvider] = [
            InMemoryProvider(
                name: "flags",
                values: Dictionary(
                    uniqueKeysWithValues: overrides.map {
                        (AbsoluteConfigKey(ConfigKey($0.key).components), ConfigValue($0.value, isSecret: false))
                    })),
            InMemoryProvider(
                name: "secret files",
                values: Dictionary(
                    uniqueKeysWithValues: try secretFileValues(environment).map {
                        (AbsoluteConfigKey(ConfigKey($0.key).components), ConfigValue(.string($0.value), isSecret: true))
                    })),
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["latch"]),
        ]
        if let configFile {
            // The file provider reads its path from a reader of its own.
            let fileSettings = InMemoryProvider(values: ["filePath": ConfigValue(.string(configFile), isSecret: false)])
            providers.append(try await FileProvider<JSONSnapshot>(config: ConfigReader(provider: fileSettings)))
        }
        return ConfigReader(providers: providers, accessReporter: audit)
    }
}
