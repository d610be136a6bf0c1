import ArgumentParser
import Foundation
import LatchAttestation
import LatchClient
import LatchJOSE
import LatchModel

/// `latch device`: a simulated device built on the SDK, for demos, scripts and tests.
///
/// Exit codes, stable for scripts: 0 done; 1 the server refused (other errors); 2 usage; 3 server unreachable;
/// 4 not registered; 5 not signed in (or the session ended); 6 not authorized (or an issuer token refused); 7 a more
/// recent sign-in (or issuer login) is needed;
/// 8 already registered; 9 a wrong PIN, or a PIN authenticator cooling down or locked out; 10 a custom registration must
/// start again (the hook answered 5000–5999, or the transaction ended); 11 a custom registration was cancelled, or a
/// browser sign-in got no answer in time. A refused browser sign-in (an `error` answer, a wrong `state` or `iss`) is 6.
struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A simulated device using the Swift SDK: register, sign in, refresh, sign out, de-register.",
        subcommands: [
            Register.self, SignIn.self, Refresh.self, WhoAmI.self, Status.self, SignOut.self, GlobalSignOut.self,
            Deregister.self, Reset.self, Fido.self, OutOfBand.self, Link.self, Login.self, Logout.self, LogoutAll.self,
            LoginStatusCommand.self, CustomProviders.self, FederatedSignIn.self, FederatedSignOut.self,
        ])

    /// Where the device keeps its state and which server it talks to; accepted after every subcommand.
    struct Options: ParsableArguments {
        @Option(help: "Latch base URL (env LATCH_SERVER; default http://localhost:8080, the issuer `latch serve` uses by default).")
        var server: String?
        @Option(help: "Folder of the device's keys and tokens.")
        var stateDir: String = "./latch-device"
        @Option(help: "The app's client id (default: from --config, else 'default').")
        var clientId: String?
        @Option(help: "A client configuration file (latch admin client-config).")
        var config: String?
        @Flag(
            name: .customLong("no-dpop"),
            help: "Sign in without DPoP: bearer tokens, not bound to a key of this device (a session bound before still proves its key).")
        var noDPoP = false

        func configuration() throws -> LatchClientConfiguration {
            var configuration: LatchClientConfiguration
            if let config {
                _ = try InputFile.text(config, option: "--config", hint: "Write one with `latch admin client-config --client-id ID > latch-client.json`.")
                configuration = try LatchClientConfiguration.load(from: URL(fileURLWithPath: config))
            } else {
                let server = server ?? ProcessInfo.processInfo.environment["LATCH_SERVER"] ?? "http://localhost:8080"
                guard let url = URL(string: server) else { throw ValidationError("--server must be a URL") }
                configuration = LatchClientConfiguration(serverURL: url)
            }
            if let server, config != nil, let url = URL(string: server) { configuration.serverURL = url }
            if let clientId {
                configuration.clientId = clientId
                if config == nil { configuration.namespace = clientId }
            }
            if noDPoP { configuration.dpop = false }
            return configuration
        }

        func client() throws -> UserClient {
            let configuration = try configuration()
            let store = try FileKeyStore(root: URL(fileURLWithPath: stateDir), namespace: configuration.namespace)
            return try UserClient(configuration: configuration, keyStore: store)
        }

        /// The custom federated provider saved at registration, if this device registered that way.
        var providerFile: URL { URL(fileURLWithPath: stateDir).appendingPathComponent("provider.json") }
        /// The simulated attestation saved at registration, if this device registered that way.
        var attestationFile: URL { URL(fileURLWithPath: stateDir).appendingPathComponent("attestation.json") }

        /// The simulated App Attest service of a device registered with `--attest app-attest`.
        func appAttestDevice(_ saved: SimulatedAttestation.Saved) throws -> SimulatedAttestation.AppAttestDevice {
            SimulatedAttestation.AppAttestDevice(
                authority: try SimulatedAttestation.authority(saved.testRoot), appID: saved.appId ?? "",
                environment: AppAttest.Environment(rawValue: saved.environment ?? "production") ?? .production,
                folder: URL(fileURLWithPath: stateDir).appendingPathComponent("app-attest"))
        }
    }

    /// What `register --fsso-key` remembers so that `sign-in` can sign again.
    struct SavedProvider: Codable {
        var issuer: String
        var kid: String
        var keyFile: String
        var username: String

        func provider() throws -> LocalAuthenticationProvider {
            try LocalAuthenticationProvider(
                issuer: issuer, keyID: kid,
                privateKeyPEM: try InputFile.text(keyFile, option: "--fsso-key", hint: "It is the issuer's private key (PEM) that signs custom federated JWTs."),
                username: username)
        }
    }

    /// Runs `body`, turning SDK errors into a message on stderr and a stable exit code.
    static func perform(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as UserClientError {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(exitCode(error))
        }
    }

    static func exitCode(_ error: UserClientError) -> Int32 {
        switch error.code {
        case .network, .serviceUnavailable: 3
        case .notRegistered, .deviceKeyLost: 4
        case .notSignedIn: 5
        case .notAuthorized, .issuerTokenRejected, .pinBindingInvalid: 6
        case .insufficientAuthentication: 7
        case .alreadyRegistered: 8
        case .invalidConfiguration, .invalidInput, .pinRefused: 2
        case .pinAttemptFailed: 9
        case .registrationRestartRequired: 10
        case .customRegistrationCancelled, .cancelled: 11
        case .federatedSignInFailed, .federatedSignInStateMismatch, .federatedSignInIssuerMismatch: 6
        default: 1
        }
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: """
                Register a user: with a test registration key (makes a device key), as a custom federated user, with simulated \
                attestation, or with a custom identity provider (makes a device key).
                """,
            discussion: """
                --custom ID runs a custom registration: the provider's hook (called by Latch) decides. Each hook call (init for a \
                two-step provider, then complete, then each repeat after the hook answered 4000-4999) takes the next --data; \
                without --data each is read as a line from standard input (prompted for on a terminal, where Ctrl-D cancels). \
                A value that starts with `{` is sent as the JSON object it is; an empty value sends no data; anything else is \
                sent as {"code": "<value>"}. The server's data and the hook's retry answers are shown on stderr. When --data \
                values or piped lines run out, the transaction is cancelled and the exit code is 2. Exit 10: the registration must \
                start again (the hook answered 5000-5999, or the transaction expired); exit 11: cancelled. \
                `latch device custom-providers` lists the providers.
                """)
        @OptionGroup var options: Options
        @Option(help: "Simulated device attestation: app-attest, android-key or play-integrity (needs --test-root).") var attest: String?
        @Option(help: "Folder of `latch admin attestation test-root create` (root.pem, root.key, play-integrity.json).") var testRoot: String?
        @Option(help: "App Attest: the App ID TEAMID.bundleId registered on the client.") var appId: String?
        @Option(help: "App Attest: production or development.") var environment = "production"
        @Option(help: "Android: the package name registered on the client.") var package: String?
        @Option(help: "Android: SHA-256 (hex) of the app's signing certificate, registered on the client.") var signingCertificate: String?
        @Option(help: "PEM test registration key (latch admin test-keys create --out).") var testKey: String?
        @Option(help: "The test key's id.") var keyId = "register_key"
        @Option(help: "Name prefix of the test user.") var name = "device"
        @Flag(help: "Make an RSA-2048 device key instead of P-256.") var rsa = false
        @Option(help: "PEM private key of a custom federated issuer.") var fssoKey: String?
        @Option(help: "The issuer's name (iss).") var issuer: String?
        @Option(help: "The issuer key's id (kid).") var kid: String?
        @Option(help: "The federated username (sub).") var username: String?
        @Option(help: "A custom identity provider's id: register with it (see above).") var custom: String?
        @Option(
            name: .customLong("data"),
            help: "With --custom: the data of the next hook call (a JSON object, or a value for \"code\"); repeatable, used in order.")
        var customData: [String] = []

        /// What a registration needs, all four ways.
        static let oneProof = """
            give one way to register: --test-key FILE (a test registration key), --fsso-key FILE with --issuer, --kid and \
            --username (a custom federated issuer), --attest app-attest|android-key|play-integrity with --test-root DIR \
            (simulated attestation), or --custom ID (a custom identity provider; `latch device custom-providers` lists them)
            """

        func validate() throws {
            if let custom {
                guard attest == nil, testKey == nil, fssoKey == nil else { throw ValidationError("--custom goes without --attest, --test-key and --fsso-key") }
                guard !custom.isEmpty else { throw ValidationError("--custom needs the provider's id") }
                for value in customData {
                    do {
                        _ = try Device.customData(value)
                    } catch {
                        throw ValidationError("--data: \(error)")
                    }
                }
                return
            }
            guard customData.isEmpty else { throw ValidationError("--data goes with --custom") }
            if let attest {
                guard testKey == nil, fssoKey == nil else { throw ValidationError("--attest goes without --test-key and --fsso-key") }
                guard testRoot != nil else { throw ValidationError("--attest needs --test-root") }
                switch attest {
                case "app-attest": guard appId != nil else { throw ValidationError("--attest app-attest needs --app-id") }
                case "android-key", "play-integrity":
                    guard package != nil, signingCertificate.flatMap({ Hex.decode($0.replacingOccurrences(of: ":", with: "")) })?.count == 32 else {
                        throw ValidationError("--attest \(attest) needs --package and --signing-certificate (64 hex digits)")
                    }
                default: throw ValidationError("--attest must be app-attest, android-key or play-integrity")
                }
                return
            }
            guard (testKey == nil) != (fssoKey == nil) else { throw ValidationError(Self.oneProof) }
            if fssoKey != nil, issuer == nil || kid == nil || username == nil {
                throw ValidationError("--fsso-key needs --issuer, --kid and --username")
            }
        }

        func run() async throws {
            try await Device.perform {
                let configuration = try options.configuration()
                // Files named on the command line are read before any state is created.
                let testKeyPEM = try testKey.map {
                    try InputFile.text(
                        $0, option: "--test-key", hint: "Create one with `latch admin test-keys create --out test.pem`; its private key is shown only then.")
                }
                var saved: SavedProvider?
                var federated: LocalAuthenticationProvider?
                if let fssoKey, let issuer, let kid, let username {
                    saved = SavedProvider(issuer: issuer, kid: kid, keyFile: URL(fileURLWithPath: fssoKey).path, username: username)
                    federated = try saved?.provider()
                }
                let store = try FileKeyStore(root: URL(fileURLWithPath: options.stateDir), namespace: configuration.namespace)
                let client = try UserClient(configuration: configuration, keyStore: store, deviceKeyAlgorithm: rsa ? .RS256 : .ES256)
                let registered: String
                var userID: String?
                if let custom {
                    let result = try await Self.registerCustom(client, provider: custom, data: customData)
                    registered = result.username
                    userID = result.userId
                } else if let attest, let testRoot {
                    let authority = try SimulatedAttestation.authority(testRoot)
                    let digest = signingCertificate.flatMap { Hex.decode($0.replacingOccurrences(of: ":", with: "")) } ?? []
                    let saved = SimulatedAttestation.Saved(kind: attest, testRoot: URL(fileURLWithPath: testRoot).path, appId: appId, environment: environment)
                    switch attest {
                    case "app-attest":
                        registered = try await client.registerWithAppAttest(try options.appAttestDevice(saved))
                    case "android-key":
                        registered = try await client.registerWithAndroidKeyAttestation(
                            SimulatedAttestation.AndroidKeyDevice(authority: authority, packageName: package ?? "", signatureDigest: digest))
                    default:
                        let keysText = try InputFile.text(
                            testRoot + "/play-integrity.json", option: "--test-root", hint: "It is written by `latch admin attestation test-root create`.")
                        let keys = try JSONDecoder().decode(TestPlayIntegrityKeys.self, from: Data(keysText.utf8))
                        registered = try await client.registerWithPlayIntegrity(
                            SimulatedAttestation.PlayIntegrityDevice(packageName: package ?? "", keys: keys, signatureDigest: digest))
                    }
                    try JSONEncoder().encode(saved).write(to: options.attestationFile)
                } else if let pem = testKeyPEM {
                    registered = try await client.registerWithAuthenticationProvider(TESTAuthenticationProvider(name: name, privateKeyPEM: pem, keyID: keyId))
                } else if let federated, let saved {
                    registered = try await client.registerWithAuthenticationProvider(federated)
                    try JSONEncoder().encode(saved).write(to: options.providerFile)
                } else {
                    throw ValidationError(Self.oneProof)
                }
                print("registered \(registered)" + (userID.map { " (user id \($0))" } ?? ""))
            }
        }
    }

    struct SignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sign-in", abstract: "Sign in (device key, or the saved federated provider).")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                if let data = try? Data(contentsOf: options.attestationFile),
                    let saved = try? JSONDecoder().decode(SimulatedAttestation.Saved.self, from: data), saved.kind == "app-attest"
                {
                    try await client.signInWithAppAttest(try options.appAttestDevice(saved))
                } else if let data = try? Data(contentsOf: options.providerFile) {
                    try await client.signInWithAuthenticationProvider(try JSONDecoder().decode(SavedProvider.self, from: data).provider())
                } else {
                    try await client.signInWithKey()
                }
                print("signed in as \(await client.userName() ?? "?")")
            }
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refresh the tokens (the refresh token rotates).")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                let tokens = try await options.client().refreshTokens()
                print("refreshed; tokens expire \(ISO8601DateFormatter().string(from: tokens.tokenExpiry)), session \(ISO8601DateFormatter().string(from: tokens.refreshTokenExpiry))")
            }
        }
    }

    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "whoami", abstract: "Print the verified ID-token claims as JSON (with --binding: how the tokens are bound).")
        @OptionGroup var options: Options
        @Flag(help: "Print the tokens' binding instead: {token_type, jkt (cnf.jkt), device_key (bound to the device sign-in key)}.")
        var binding = false
        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                if binding {
                    guard let bound = await client.tokenBinding() else { throw UserClientError.notSignedIn }
                    print(String(decoding: Device.bindingJSON(bound).serialized(), as: UTF8.self))
                    return
                }
                let claims = try await client.userClaims()
                print(String(decoding: JSONValue.object(claims).serialized(), as: UTF8.self))
            }
        }
    }

    /// `{"token_type", "jkt", "device_key"}`: what `whoami --binding` prints.
    static func bindingJSON(_ binding: TokenBinding) -> JSONValue {
        [
            "token_type": .string(binding.tokenType), "jkt": binding.thumbprint.map { .string($0) } ?? .null,
            "device_key": .bool(binding.isDeviceKey),
        ]
    }

    /// `token=DPoP jkt=… key=device|own`, or `token=Bearer`: the binding as `status` shows it.
    static func bindingText(_ binding: TokenBinding) -> String {
        guard let thumbprint = binding.thumbprint else { return "token=\(binding.tokenType)" }
        return "token=\(binding.tokenType) jkt=\(thumbprint) key=\(binding.isDeviceKey ? "device" : "own")"
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print whether a user is registered and signed in here, and how the tokens are bound (DPoP).")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                let registered = await client.isRegistered()
                let signedIn = await client.isSignedIn()
                let binding = signedIn ? await client.tokenBinding().map { " " + Device.bindingText($0) } ?? "" : ""
                print("registered=\(registered) signedIn=\(signedIn) user=\(await client.userName() ?? "-")\(binding)")
            }
        }
    }

    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sign-out", abstract: "Revoke this device's refresh token and forget the tokens.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                try await options.client().signOut()
                print("signed out")
            }
        }
    }

    struct GlobalSignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "global-sign-out", abstract: "End every session of the user on every device.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                try await options.client().globalSignOut()
                print("signed out everywhere")
            }
        }
    }

    struct Deregister: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete the user on the server (needs a recent sign-in), then reset.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                try await options.client().deregister()
                try? FileManager.default.removeItem(at: options.providerFile)
                try? FileManager.default.removeItem(at: options.attestationFile)
                print("deregistered")
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget this device's keys and tokens (this client's namespace only).")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                try await options.client().reset()
                try? FileManager.default.removeItem(at: options.providerFile)
                try? FileManager.default.removeItem(at: options.attestationFile)
                print("reset")
            }
        }
    }
}
