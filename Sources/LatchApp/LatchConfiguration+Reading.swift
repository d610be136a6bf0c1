import Configuration
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Logging

extension LatchConfiguration {
    /// Reads every key from `reader`; throws ``ConfigurationError`` naming the first value out of range. Values of
    /// the wrong type are caught by ``load(overrides:environment:configFile:)``, which also names the source.
    public init(reader: ConfigReader) throws {
        self.init()
        try readServer(reader)
        try readKeysAndTokens(reader)
        try readServices(reader)
        try readFido(reader)
        try readAttestation(reader)
        try readOperations(reader)
    }

    /// The listener, the data directory and database, the issuer, `production`.
    private mutating func readServer(_ reader: ConfigReader) throws {
        host = reader.string(forKey: "http.host", default: host)
        port = Int(try reader.ranged("http.port", Int64(port)))
        idleTimeout = try reader.ranged("http.idleTimeout", idleTimeout)
        headerTimeout = try reader.ranged("http.headerTimeout", headerTimeout)
        bodyTimeout = try reader.ranged("http.bodyTimeout", bodyTimeout)
        maxConnections = Int(try reader.ranged("http.maxConnections", Int64(maxConnections)))
        dataDirectory = reader.string(forKey: "data.dir", default: dataDirectory)
        let databaseURL = reader.string(forKey: "database.url", isSecret: true).flatMap { $0.isEmpty ? nil : $0 }
        self.databaseURL = databaseURL.map(Redacted.init)
        if let databaseURL, !(databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://")) {
            throw ConfigurationError(key: "database.url", problem: "must be a postgres:// URL")
        }
        databasePoolSize = Int(try reader.ranged("database.poolSize", Int64(databasePoolSize)))
        databaseTimeout = try reader.ranged("database.timeout", databaseTimeout)
        issuer = reader.string(forKey: "issuer")
        if let issuer, let problem = Self.issuerProblem(issuer) { throw ConfigurationError(key: "issuer", problem: problem) }
        production = reader.bool(forKey: "production", default: false)
    }

    /// Signing keys, token lifetimes, assertions, registration, issuer logins.
    private mutating func readKeysAndTokens(_ reader: ConfigReader) throws {
        let algorithm = reader.string(forKey: "keys.algorithm", default: "ES256")
        guard let parsed = JWSAlgorithm(rawValue: algorithm), JWSAlgorithm.signing.contains(parsed) else {
            throw ConfigurationError(key: "keys.algorithm", problem: "must be ES256 or RS256")
        }
        signingAlgorithm = parsed
        if let encoded = reader.string(forKey: "keys.encryptionKey", isSecret: true) {
            guard let bytes = Data(base64Encoded: encoded), bytes.count == 32 else {
                throw ConfigurationError(key: "keys.encryptionKey", problem: "must be base64 of 32 bytes")
            }
            keyEncryptionKey = Redacted(Array(bytes))
        }
        tokens.accessLifetime = try reader.ranged("tokens.accessLifetime", tokens.accessLifetime)
        tokens.idLifetime = try reader.ranged("tokens.idLifetime", tokens.idLifetime)
        tokens.refreshLifetime = try reader.ranged("tokens.refreshLifetime", tokens.refreshLifetime)
        tokens.refreshGrace = try reader.ranged("tokens.refreshGrace", tokens.refreshGrace)
        tokens.accessAudience = reader.string(forKey: "tokens.accessAudience")
        assertions.audience = reader.string(forKey: "assertions.audience", default: assertions.audience)
        assertions.clockSkew = try reader.ranged("assertions.clockSkew", assertions.clockSkew)
        assertions.defaultIssuerMaxLifetime = try reader.ranged("assertions.maxLifetime", assertions.defaultIssuerMaxLifetime)
        assertions.deviceAssertionMaxLifetime = try reader.ranged("assertions.deviceMaxLifetime", assertions.deviceAssertionMaxLifetime)
        assertions.nonceLifetime = try reader.ranged("signIn.nonceLifetime", assertions.nonceLifetime)
        registration.testKeysEnabled = reader.bool(forKey: "registration.testKeys", default: true)
        sensitiveMaxAge = try reader.ranged("sensitive.maxAgeSeconds", sensitiveMaxAge)
        issuerLogin.validity = try reader.ranged("login.validity", issuerLogin.validity)
        issuerLogin.sensitiveMaxAge = try reader.ranged("login.sensitiveMaxAge", issuerLogin.sensitiveMaxAge)
        issuerLogin.refreshBeyondValidity = reader.bool(forKey: "login.refreshBeyondValidity", default: false)
        issuerLogin.clockSkew = assertions.clockSkew
    }

    /// Hooks, DPoP, metrics, tracing, the audit log, federation.
    private mutating func readServices(_ reader: ConfigReader) throws {
        hooksAllowPrivateAddresses = reader.bool(forKey: "hooks.allowPrivateAddresses", default: false)
        dpopRequireNonce = reader.bool(forKey: "dpop.requireNonce", default: false)
        metricsEnabled = reader.bool(forKey: "metrics.enabled", default: true)
        metricsPort = Int(try reader.ranged("metrics.port", Int64(metricsPort)))
        metricsHost = reader.string(forKey: "metrics.host", default: metricsHost)
        tracingEnabled = reader.bool(forKey: "tracing.enabled", default: false)
        tracingServiceName = reader.string(forKey: "tracing.serviceName", default: tracingServiceName)
        auditRetentionDays = try reader.ranged("audit.retentionDays", auditRetentionDays)
        federation.webSessionLifetime = try reader.ranged("federation.webSessionLifetime", federation.webSessionLifetime)
        federation.upstreamTimeout = try reader.ranged("federation.upstreamTimeout", federation.upstreamTimeout)
    }

    /// WebAuthn, out-of-band enrollment and PINs (`fido.*`, `oob.*`).
    private mutating func readFido(_ reader: ConfigReader) throws {
        fidoRPID = reader.string(forKey: "fido.rpId").flatMap { $0.isEmpty ? nil : $0 }
        fidoOrigins = (reader.string(forKey: "fido.origins") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        fidoRequireUserVerification = reader.bool(forKey: "fido.requireUserVerification", default: false)
        fidoSignUp = reader.bool(forKey: "fido.signUp", default: true)
        fidoTrustAnchorsFolder = reader.string(forKey: "fido.trustAnchors").flatMap { $0.isEmpty ? nil : $0 }
        fidoMetadataBlobFile = reader.string(forKey: "fido.metadataBlob").flatMap { $0.isEmpty ? nil : $0 }
        fidoMetadataRootsFile = reader.string(forKey: "fido.metadataRoots").flatMap { $0.isEmpty ? nil : $0 }
        fidoRequireAttestation = reader.bool(forKey: "fido.requireAttestation", default: false)
        fidoAllowedAAGUIDs = try Self.aaguids(reader.string(forKey: "fido.allowedAaguids"), key: "fido.allowedAaguids")
        fidoDeniedAAGUIDs = try Self.aaguids(reader.string(forKey: "fido.deniedAaguids"), key: "fido.deniedAaguids")
        fidoMaxAuthenticatorsPerUser = try reader.ranged("fido.maxAuthenticatorsPerUser", fidoMaxAuthenticatorsPerUser)
        oobTokenLifetime = try reader.ranged("oob.tokenLifetime", oobTokenLifetime)
        fidoPin.minLength = Int(try reader.ranged("fido.pin.minLength", Int64(fidoPin.minLength)))
        fidoPin.maxLength = Int(try reader.ranged("fido.pin.maxLength", Int64(fidoPin.maxLength)))
        // One bound given alone moves the other's default along; both given must agree.
        switch (reader.string(forKey: "fido.pin.minLength") != nil, reader.string(forKey: "fido.pin.maxLength") != nil) {
        case (false, _): fidoPin.minLength = min(fidoPin.minLength, fidoPin.maxLength)
        case (true, false): fidoPin.maxLength = max(fidoPin.minLength, fidoPin.maxLength)
        case (true, true):
            guard fidoPin.minLength <= fidoPin.maxLength else {
                throw ConfigurationError(key: "fido.pin.minLength", problem: "must not exceed fido.pin.maxLength (\(fidoPin.maxLength))")
            }
        }
        fidoPin.maxAttempts = Int(try reader.ranged("fido.pin.maxAttempts", Int64(fidoPin.maxAttempts)))
        let coolDownKeys: [(key: String, config: ConfigKey, path: WritableKeyPath<PinPolicy, [Int64]>)] = [
            ("fido.pin.coolDowns", "fido.pin.coolDowns", \.coolDowns), ("fido.pin.unboundCoolDowns", "fido.pin.unboundCoolDowns", \.unboundCoolDowns),
        ]
        for (key, config, path) in coolDownKeys {
            guard let text = reader.string(forKey: config) else { continue }
            let values = text.split(separator: ",", omittingEmptySubsequences: false).map { Int64($0.trimmingCharacters(in: .whitespaces)) }
            guard (1...16).contains(values.count), values.allSatisfy({ $0.map { (0...86_400).contains($0) } ?? false }) else {
                throw ConfigurationError(key: key, problem: "must be 1–16 comma-separated seconds, each 0–86400")
            }
            fidoPin[keyPath: path] = values.compactMap { $0 }
        }
    }

    /// Attestation roots and the App Attest, Android and Play Integrity policies (`attestation.*`).
    private mutating func readAttestation(_ reader: ConfigReader) throws {
        attestationChallengeLifetime = try reader.ranged("attestation.challengeLifetime", attestationChallengeLifetime)
        appAttestRootsFile = reader.string(forKey: "attestation.appAttestRoots").flatMap { $0.isEmpty ? nil : $0 }
        androidKeyRootsFile = reader.string(forKey: "attestation.androidKeyRoots").flatMap { $0.isEmpty ? nil : $0 }
        testAttestationRootFile = reader.string(forKey: "attestation.testRoot").flatMap { $0.isEmpty ? nil : $0 }
        for (key, keyPath) in [("attestation.deviceCheckURL", \LatchConfiguration.deviceCheckURL), ("attestation.deviceCheckDevelopmentURL", \.deviceCheckDevelopmentURL)] {
            let value = reader.string(forKey: ConfigKey(key), default: self[keyPath: keyPath])
            guard let url = URLComponents(string: value), ["https", "http"].contains(url.scheme ?? ""), url.host?.isEmpty == false, url.query == nil,
                !value.hasSuffix("/")
            else { throw ConfigurationError(key: key, problem: "must be an http(s) base URL without a trailing /") }
            self[keyPath: keyPath] = value
        }
        deviceCheckTimeout = try reader.ranged("attestation.deviceCheckTimeout", deviceCheckTimeout)
        androidMinSecurityLevel = reader.string(forKey: "attestation.androidMinSecurityLevel", default: androidMinSecurityLevel)
        guard ["software", "tee", "strongbox"].contains(androidMinSecurityLevel) else {
            throw ConfigurationError(key: "attestation.androidMinSecurityLevel", problem: "must be software, tee or strongbox")
        }
        androidRequireVerifiedBoot = reader.bool(forKey: "attestation.androidRequireVerifiedBoot", default: true)
        androidStatusListFile = reader.string(forKey: "attestation.androidStatusList").flatMap { $0.isEmpty ? nil : $0 }
        playIntegrityFreshness = try reader.ranged("attestation.playIntegrityFreshness", playIntegrityFreshness)
        playIntegrityDeviceVerdict = reader.string(forKey: "attestation.playIntegrityDeviceVerdict", default: playIntegrityDeviceVerdict)
        guard ["basic", "device", "strong"].contains(playIntegrityDeviceVerdict) else {
            throw ConfigurationError(key: "attestation.playIntegrityDeviceVerdict", problem: "must be basic, device or strong")
        }
        playIntegrityRequireRecognized = reader.bool(forKey: "attestation.playIntegrityRequireRecognized", default: true)
        playIntegrityRequireLicensed = reader.bool(forKey: "attestation.playIntegrityRequireLicensed", default: false)
    }

    /// The admin token, the default client, logging, housekeeping and rate limits.
    private mutating func readOperations(_ reader: ConfigReader) throws {
        let adminToken = reader.string(forKey: "admin.token", isSecret: true).flatMap { $0.isEmpty ? nil : $0 }
        if let adminToken, let problem = Self.adminTokenProblem(adminToken) { throw ConfigurationError(key: "admin.token", problem: problem) }
        self.adminToken = adminToken.map(Redacted.init)
        defaultClientID = reader.string(forKey: "clients.default", default: defaultClientID)
        let level = reader.string(forKey: "log.level", default: "info")
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw ConfigurationError(key: "log.level", problem: "must be trace, debug, info, notice, warning, error or critical")
        }
        self.logLevel = logLevel
        let format = reader.string(forKey: "log.format", default: "text")
        guard let logFormat = LogFormat(rawValue: format) else { throw ConfigurationError(key: "log.format", problem: "must be text or json") }
        self.logFormat = logFormat
        housekeepingInterval = Int(try reader.ranged("housekeeping.interval", Int64(housekeepingInterval)))
        rateLimitPerMinute = Int(try reader.ranged("rateLimit.perMinute", Int64(rateLimitPerMinute)))
        trustForwardedFor = reader.bool(forKey: "rateLimit.trustForwardedFor", default: false)
        trustedHops = Int(try reader.ranged("rateLimit.trustedHops", Int64(trustedHops)))
        adminFailuresPerMinute = Int(try reader.ranged("rateLimit.adminFailuresPerMinute", Int64(adminFailuresPerMinute)))
    }
}

extension ConfigReader {
    /// The integer at `key` (else `fallback`), refused with a ``ConfigurationError`` outside ``LatchConfiguration/ranges``.
    fileprivate func ranged(_ key: String, _ fallback: Int64) throws -> Int64 {
        let value = Int64(int(forKey: ConfigKey(key), default: Int(fallback)))
        let range = LatchConfiguration.ranges[key]!
        guard range.contains(value) else {
            throw ConfigurationError(key: key, problem: "must be \(range.lowerBound)–\(range.upperBound), not \(value)")
        }
        return value
    }
}
