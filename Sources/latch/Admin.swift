import ArgumentParser
import Foundation
import LatchModel

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer Latch: a running server through its admin API, or a deployment's data folder directly.",
        discussion: """
            On the data folder (--data-dir / --config; no server or admin token needed): bootstrap, backup, restore. \
            They refuse a folder that holds no deployment (exit 13) unless --init is given where offered (bootstrap); \
            `latch keys` works on the data folder too.
            Through the admin API of a running server (--server or LATCH_SERVER, --token or LATCH_ADMIN_TOKEN): every \
            other subcommand.
            """,
        subcommands: [
            Issuers.self, TestKeys.self, Users.self, Clients.self, Tokens.self, ClientConfig.self, RotateKey.self, AttestationAdmin.self,
            LoginIssuers.self, ResourceServers.self, CustomProviders.self, UpstreamIdPs.self, Admins.self, Audit.self, Bootstrap.self,
            Backup.self, Restore.self,
        ])

    // MARK: Issuers

    struct Issuers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "issuers", abstract: "Custom federated issuers.", subcommands: [Add.self, List.self, Delete.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Trust an issuer's public key.")
            @OptionGroup var server: ServerOptions
            @Option(help: "The iss its tokens carry.") var name: String
            @Option(help: "The kid its tokens carry.") var keyId: String
            @Option(help: "PEM public key file (SPKI or PKCS#1).") var publicKeyFile: String
            @Option(help: "RS256 or ES256 (default: from the key).") var algorithm: String?
            @Option(help: "The aud its tokens must carry (default: the deployment's).") var audience: String?
            @Option(help: "A custom claim to keep on the user (repeatable).") var allowedClaim: [String] = []
            @Option(help: "Longest accepted exp - iat, seconds (default 3600).") var maxLifetime: Int?

            func run() async throws {
                let pem = try InputFile.text(
                    publicKeyFile, option: "--public-key-file", hint: "It is the issuer's public key, e.g. `openssl rsa -in issuer.pem -RSAPublicKey_out`.")
                let body = AdminSignOnIssuerRequest(
                    name: name, keyId: keyId, publicKey: pem, algorithm: algorithm,
                    audience: audience, allowedClaims: allowedClaim.isEmpty ? nil : allowedClaim, maxLifetime: maxLifetime)
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/issuers", body: body))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List trusted issuer keys.")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/issuers")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an issuer (all its keys, or one).")
            @OptionGroup var server: ServerOptions
            @Argument var name: String
            @Option(help: "Only this key.") var keyId: String?
            func run() async throws {
                var path = "/admin/v1/issuers/\(name.pathEscaped)"
                if let keyId { path += "?keyId=\(keyId.pathEscaped)" }
                _ = try await AdminHTTP(options: server).send("DELETE", path)
            }
        }
    }

    // MARK: Test keys

    struct TestKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-keys", abstract: "Test registration keys.", subcommands: [Create.self, List.self, Delete.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a test key; its private key is shown this once (or written to --out, mode 0600).")
            @OptionGroup var server: ServerOptions
            @Option(help: "Key id (default: random).") var keyId: String?
            @Option(help: "RS256 (default) or ES256.") var algorithm: String?
            @Option(help: "Write the private key PEM to this file (0600) instead of printing it.") var out: String?

            func run() async throws {
                let data = try await AdminHTTP(options: server).send(
                    "POST", "/admin/v1/test-keys", body: AdminTestKeyRequest(keyId: keyId, algorithm: algorithm))
                let created = try JSONDecoder().decode(AdminTestKeyCreated.self, from: data)
                if let out {
                    try InputFile.write(created.privateKey, to: out, option: "--out")
                    print(created.keyId)
                } else {
                    AdminHTTP.printJSON(data)
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List test keys.")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/test-keys")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Revoke a test key.")
            @OptionGroup var server: ServerOptions
            @Argument var keyId: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/test-keys/\(keyId.pathEscaped)") }
        }
    }

    // MARK: Users

    struct Users: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "users", abstract: "Registered users.",
            subcommands: [List.self, Get.self, Delete.self, SignOut.self, Authenticators.self, Enroll.self, EnrollmentStatus.self])

        struct Enroll: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Out-of-band: an enrollment (or approval, deregistration) for a user's phone, as an app link and a QR code PNG.")
            @OptionGroup var server: ServerOptions
            @Argument(help: "The user's id (with --create, the id of the user to create).") var id: String
            @Flag(help: "Create the user when it does not exist.") var create = false
            @Option(help: "The username of a user created here.") var username: String?
            @Option(help: "registration (default), authentication (an approval) or deregistration.") var operation: String?
            @Option(help: "The text an approval shows on the phone.") var message: String?
            @Option(help: "Write the QR code PNG to this file.") var qrOut: String?
            func run() async throws {
                let request = OutOfBandEnrollmentRequest(createUser: create ? true : nil, username: username, operation: operation, message: message)
                let data = try await AdminHTTP(options: server).send("POST", "/admin/v1/users/\(id.pathEscaped)/enrollments", body: request)
                let answer = try JSONDecoder().decode(OutOfBandEnrollmentResponse.self, from: data)
                if let qrOut {
                    let prefix = "data:image/png;base64,"
                    guard let png = Data(base64Encoded: String(answer.enrollment.qrCode.dataUri.dropFirst(prefix.count))) else {
                        throw ValidationError("the server's QR code is not a PNG data URI")
                    }
                    try png.write(to: URL(fileURLWithPath: qrOut))
                }
                print("user \(answer.userId) (\(answer.username)), \(answer.enrollment.operation) \(answer.enrollment.transactionId) \(answer.status)")
                print("status token: \(answer.enrollment.statusToken)")
                print("expires at: \(answer.enrollment.expiresAt)")
                print("link: \(answer.enrollment.appLinkUri)")
                if let qrOut { print("QR code (\(answer.enrollment.qrCode.size) px): \(qrOut)") }
            }
        }

        struct EnrollmentStatus: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "enrollment-status", abstract: "The status of an out-of-band transaction, by its status token.")
            @OptionGroup var server: ServerOptions
            @Argument var statusToken: String
            func run() async throws {
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/v1/oob/status", body: OutOfBandStatusRequest(statusToken: statusToken)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List users, a page at a time.")
            @OptionGroup var server: ServerOptions
            @Option(help: "Page size (1–500).") var limit = 50
            @Option(help: "The nextCursor of the previous page.") var after: String?
            func run() async throws {
                var path = "/admin/v1/users?limit=\(limit)"
                if let after { path += "&after=\(after.pathEscaped)" }
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", path))
            }
        }

        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show one user.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/users/\(id.pathEscaped)")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete a user and everything that belongs to them.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/users/\(id.pathEscaped)") }
        }

        struct SignOut: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "sign-out", abstract: "Revoke every session of a user.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws {
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/users/\(id.pathEscaped)/sign-out"))
            }
        }

        struct Authenticators: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "A user's FIDO authenticators: list, unlock a locked-out PIN authenticator, delete one or all.",
                subcommands: [List.self, Unlock.self, Delete.self])

            struct List: AsyncParsableCommand {
                static let configuration = CommandConfiguration(abstract: "List a user's authenticators (with PIN status).")
                @OptionGroup var server: ServerOptions
                @Argument(help: "The user's id.") var user: String
                func run() async throws {
                    AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/users/\(user.pathEscaped)/authenticators"))
                }
            }

            struct Unlock: AsyncParsableCommand {
                static let configuration = CommandConfiguration(abstract: "Clear a PIN authenticator's failure count (unlock it).")
                @OptionGroup var server: ServerOptions
                @Argument(help: "The user's id.") var user: String
                @Argument(help: "The authenticator's id.") var authenticator: String
                func run() async throws {
                    AdminHTTP.printJSON(
                        try await AdminHTTP(options: server).send(
                            "POST", "/admin/v1/users/\(user.pathEscaped)/authenticators/\(authenticator.pathEscaped)/unlock"))
                }
            }

            struct Delete: AsyncParsableCommand {
                static let configuration = CommandConfiguration(abstract: "Delete one of a user's authenticators, or all with --all.")
                @OptionGroup var server: ServerOptions
                @Argument(help: "The user's id.") var user: String
                @Argument(help: "The authenticator's id.") var authenticator: String?
                @Flag(help: "Every authenticator of the user.") var all = false
                func validate() throws {
                    guard (authenticator == nil) != !all else { throw ValidationError("give an authenticator id or --all") }
                }
                func run() async throws {
                    let path = "/admin/v1/users/\(user.pathEscaped)/authenticators" + (authenticator.map { "/\($0.pathEscaped)" } ?? "")
                    _ = try await AdminHTTP(options: server).send("DELETE", path)
                }
            }
        }
    }

    // MARK: Clients

    struct Clients: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clients", abstract: "Apps (public clients).",
            subcommands: [Add.self, List.self, Delete.self, Evidence.self, SigningCertificates.self, BrowserSignIn.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Register an app's client id.")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            @Option(help: "Display name.") var name: String?
            func run() async throws {
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send("POST", "/admin/v1/clients", body: AdminClientRequest(clientId: clientId, name: name)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List apps.")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/clients")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an app and end its sessions.")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/clients/\(clientId.pathEscaped)") }
        }
    }

    // MARK: Admin tokens

    struct Tokens: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokens", abstract: "Admin tokens.", subcommands: [Create.self, List.self, Revoke.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create an admin token (shown once).")
            @OptionGroup var server: ServerOptions
            @Option(help: "A name to recognise it by.") var name: String?
            @Option(help: "Its role: owner, admin, support or auditor (default: yours; never above it).") var role: String?
            @Option(help: "Seconds until it expires, 60 to 31622400 (366 days); default 90 days.") var expiresIn: Int64?
            @Option(help: "The admin account it is for (owners only; default: yours).") var account: String?
            func run() async throws {
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send(
                        "POST", "/admin/v1/tokens", body: AdminTokenRequest(name: name, role: try role.map(Admins.role), expiresIn: expiresIn, accountId: account)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List admin tokens (ids, names, roles, accounts, expiries; never the tokens).")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/tokens")) }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Revoke an admin token (not the last one; the one you are using only with --force).")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            @Flag(help: "Revoke it even if it is the token this command uses (later commands with it are refused).") var force = false
            func run() async throws {
                _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/tokens/\(id.pathEscaped)" + (force ? "?force=true" : ""))
            }
        }
    }

    struct ClientConfig: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "client-config", abstract: "Print the configuration file an app ships (for LatchClient and latch device).")
        @OptionGroup var server: ServerOptions
        @Option(help: "The app's client id.") var clientId = "default"
        func run() async throws {
            AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/client-config?clientId=\(clientId.pathEscaped)"))
        }
    }

    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rotate-key", abstract: "Rotate the signing key through the API.")
        @OptionGroup var server: ServerOptions
        func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/keys/rotate")) }
    }
}

extension String {
    /// Percent-encoded for one path segment or query value.
    var pathEscaped: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? self
    }
}
