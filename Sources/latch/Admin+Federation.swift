import ArgumentParser
import Foundation
import LatchModel

extension Admin {
    // MARK: Upstream identity providers

    /// `latch admin upstream-idps`: the OpenID providers browser sign-in federates to (`/admin/v1/upstream-idps…`).
    struct UpstreamIdPs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upstream-idps", abstract: "Upstream OpenID providers that browser sign-in federates to (docs/federation.md).",
            subcommands: [Add.self, List.self, Get.self, Delete.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Add an upstream OpenID provider; prints the callbackURL and signedOutURL to register there.")
            @OptionGroup var server: ServerOptions
            @Option(help: "Its id, part of the callback URL (1-64 of a-z 0-9 - _).") var id: String
            @Option(help: "The name the chooser shows.") var displayName: String
            @Option(help: "The upstream's issuer (https; http only on loopback).") var issuer: String
            @Option(help: "Latch's client id at the upstream.") var clientId: String
            @Option(help: "A file holding Latch's client secret there (its final line break dropped); without it: private_key_jwt.")
            var clientSecretFile: String?
            @Option(help: "client_secret_basic (default with a secret), client_secret_post or private_key_jwt.") var clientAuthentication: String?
            @Option(help: "A scope to ask for (repeatable; default openid profile email).") var scope: [String] = []
            @Option(help: "The upstream claim that becomes the username (default sub).") var usernameClaim: String?
            @Option(help: "An upstream claim kept on the user (repeatable).") var keptClaim: [String] = []
            @Option(help: "Only verified emails of this domain may sign in (repeatable).") var allowedEmailDomain: [String] = []
            @Flag(help: "Also read the upstream's UserInfo endpoint.") var useUserinfo = false
            @Option(help: "An ID-token algorithm accepted (repeatable; default RS256 ES256).") var algorithm: [String] = []

            func run() async throws {
                var secret: String?
                if let clientSecretFile {
                    var text = try InputFile.text(clientSecretFile, option: "--client-secret-file", hint: "It holds Latch's client secret at the upstream.")
                    while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
                    secret = text
                }
                let body = AdminUpstreamIdPRequest(
                    id: id, displayName: displayName, issuer: issuer, clientId: clientId, clientSecret: secret, clientAuthentication: clientAuthentication,
                    scopes: scope.isEmpty ? nil : scope, usernameClaim: usernameClaim, keptClaims: keptClaim.isEmpty ? nil : keptClaim,
                    allowedEmailDomains: allowedEmailDomain.isEmpty ? nil : allowedEmailDomain, useUserinfo: useUserinfo ? true : nil,
                    algorithms: algorithm.isEmpty ? nil : algorithm)
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/upstream-idps", body: body))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List upstream identity providers (never their secrets).")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/upstream-idps")) }
        }

        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show one upstream identity provider.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws {
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/upstream-idps/\(id.pathEscaped)"))
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove an upstream identity provider and end its browsers' web sessions (its users stay).")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/upstream-idps/\(id.pathEscaped)") }
        }
    }
}

extension Admin.Clients {
    /// `latch admin clients browser-sign-in`: an app's redirect and logout URIs and its upstreams.
    struct BrowserSignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "browser-sign-in",
            abstract: "Set an app's browser sign-in: its redirect URIs, post-logout URIs and upstream identity providers (each given list replaces the stored one).")
        @OptionGroup var server: ServerOptions
        @Argument var clientId: String
        @Option(help: "A redirect URI, matched exactly (repeatable; a loopback http://127.0.0.1/... matches any port).") var redirectUri: [String] = []
        @Option(help: "A post-logout redirect URI (repeatable).") var postLogoutRedirectUri: [String] = []
        @Option(help: "An upstream identity provider id, in chooser order (repeatable).") var upstreamIdp: [String] = []

        func validate() throws {
            guard !redirectUri.isEmpty || !postLogoutRedirectUri.isEmpty || !upstreamIdp.isEmpty else {
                throw ValidationError("give --redirect-uri, --post-logout-redirect-uri or --upstream-idp")
            }
        }

        func run() async throws {
            let body = AdminClientPatch(
                redirectUris: redirectUri.isEmpty ? nil : redirectUri, postLogoutRedirectUris: postLogoutRedirectUri.isEmpty ? nil : postLogoutRedirectUri,
                upstreamIdps: upstreamIdp.isEmpty ? nil : upstreamIdp)
            AdminHTTP.printJSON(try await AdminHTTP(options: server).send("PATCH", "/admin/v1/clients/\(clientId.pathEscaped)", body: body))
        }
    }
}
