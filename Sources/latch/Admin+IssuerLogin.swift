import ArgumentParser
import Foundation
import LatchModel

extension Admin {
    // MARK: Login issuers

    /// `latch admin login-issuers`: the backends whose issuer tokens log consumers in.
    struct LoginIssuers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login-issuers", abstract: "Login issuers: backends whose short-lived issuer tokens log consumers in.",
            subcommands: [Add.self, List.self, Delete.self, LogoutConsumer.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Trust a login issuer: its static keys (--key) or its JWK Set (--jwks-url).")
            @OptionGroup var server: ServerOptions
            @Option(help: "The iss its tokens carry.") var issuerId: String
            @Option(help: "The aud its tokens must carry.") var audience: String
            @Option(help: "A static key as kid:ALG:path/to/public.pem, ALG ES256, ES384 or RS256 (repeatable).") var key: [String] = []
            @Option(help: "Where its JWK Set is published (https; http only to localhost).") var jwksUrl: String?
            @Option(help: "Longest accepted exp - iat, seconds (default 300).") var maxTokenLifetime: Int?
            @Option(help: "A scope value its tokens may carry (repeatable).") var allowedScope: [String] = []
            @Flag(help: "Its keys also sign custom federated sign-in and registration JWTs.") var customFederation = false

            func validate() throws {
                guard key.isEmpty != (jwksUrl == nil) else { throw ValidationError("give --key (one or more) or --jwks-url, not both") }
                for value in key { _ = try Self.parse(value) }
            }

            /// `kid:ALG:path` (the path may itself contain colons).
            static func parse(_ value: String) throws -> (kid: String, algorithm: String, path: String) {
                let parts = value.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
                    throw ValidationError("--key must be kid:ALG:path/to/public.pem (e.g. k1:ES256:issuer.pub.pem)")
                }
                return (parts[0], parts[1].uppercased(), parts[2])
            }

            func run() async throws {
                let keys = try key.map { value in
                    let (kid, algorithm, path) = try Self.parse(value)
                    let pem = try InputFile.text(
                        path, option: "--key", hint: "It is the issuer's public key (SPKI PEM), e.g. `openssl ec -in issuer.pem -pubout`.")
                    return LoginIssuerKey(kid: kid, algorithm: algorithm, publicKey: pem)
                }
                let body = AdminLoginIssuerRequest(
                    issuerId: issuerId, audience: audience, keys: keys.isEmpty ? nil : keys, jwksURL: jwksUrl, maxTokenLifetime: maxTokenLifetime,
                    allowedScopes: allowedScope.isEmpty ? nil : allowedScope, customFederation: customFederation ? true : nil)
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/login-issuers", body: body))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List login issuers.")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/login-issuers")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove a login issuer: its tokens are refused from now on (sessions it logged in run to their end).")
            @OptionGroup var server: ServerOptions
            @Argument var issuerId: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/login-issuers/\(issuerId.pathEscaped)") }
        }

        struct LogoutConsumer: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "logout-consumer", abstract: "End every session, on every device, holding one consumer of a login issuer.")
            @OptionGroup var server: ServerOptions
            @Argument var issuerId: String
            @Argument var consumerId: String
            func run() async throws {
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send(
                        "POST", "/admin/v1/login-issuers/\(issuerId.pathEscaped)/consumers/\(consumerId.pathEscaped)/logout-all"))
            }
        }
    }

    // MARK: Resource servers

    /// `latch admin resource-servers`: credentials for token introspection (`POST /oauth2/introspect`).
    struct ResourceServers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resource-servers", abstract: "Resource servers: HTTP Basic credentials for token introspection.",
            subcommands: [Create.self, List.self, Delete.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create a resource server; its clientSecret is shown this once.")
            @OptionGroup var server: ServerOptions
            @Option(help: "A name to recognise it by.") var name: String
            func run() async throws {
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send("POST", "/admin/v1/resource-servers", body: AdminResourceServerRequest(name: name)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List resource servers (never their secrets).")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/resource-servers")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove a resource server (its credential stops working).")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            func run() async throws {
                _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/resource-servers/\(clientId.pathEscaped)")
            }
        }
    }
}
