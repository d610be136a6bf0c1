import ArgumentParser
import Foundation
import LatchClient
import LatchModel

extension Device {
    /// `latch device login`: an issuer login with one or more issuer tokens, or (`--add`) more tokens for the session.
    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Log in with issuer tokens (one session for every consumer they name), or add them to the session with --add.",
            discussion: """
                Each --issuer-token is a JWT a login issuer signed (iss = its issuerId, sub = one or more consumer ids separated \
                by spaces). A refused token is named by its 0-based position: `error: issuer token 1 refused: …`, exit 6.
                """)
        @OptionGroup var options: Options
        @Option(name: .customLong("issuer-token"), help: "An issuer token (JWT); repeatable.") var issuerTokens: [String] = []
        @Flag(help: "Add the tokens' consumers to the current session instead of logging in anew.") var add = false
        @Option(help: "The scope to request (a new login only).") var scope: String?

        func validate() throws {
            guard !issuerTokens.isEmpty else { throw ValidationError("give one or more --issuer-token") }
            if add, scope != nil { throw ValidationError("--scope goes with a new login, not --add") }
        }

        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                if add {
                    try await client.addIssuerTokens(issuerTokens)
                } else {
                    try await client.login(issuerTokens: issuerTokens, scope: scope)
                }
                let session = try await client.userClaim("sid")?.stringValue ?? "?"
                let pairs = try await client.consumers.map { "\($0.issuer)/\($0.consumer)" }.joined(separator: " ")
                print("\(add ? "added; session" : "logged in; session") \(session), consumers: \(pairs)")
            }
        }
    }

    /// `latch device logout`.
    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End this session on the server and forget the tokens.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                let revoked = try await options.client().logout()
                print("logged out (\(revoked) session\(revoked == 1 ? "" : "s") ended)")
            }
        }
    }

    /// `latch device logout-all`.
    struct LogoutAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logout-all", abstract: "End every session, on every device, holding any consumer of this login; forget the tokens.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                let revoked = try await options.client().logoutAll()
                print("logged out everywhere (\(revoked) session\(revoked == 1 ? "" : "s") ended)")
            }
        }
    }

    /// `latch device login-status`.
    struct LoginStatusCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login-status", abstract: "Print the server's view of this login as JSON (age, consumers, sensitive window).",
            discussion: """
                With --sensitive the server checks that the login is recent enough for a sensitive operation; when it is \
                older than the window, nothing is printed on stdout and the exit code is 7 (a more recent login is needed; \
                log in again or `login --add` a fresh issuer token). Exit 5: not signed in.
                """)
        @OptionGroup var options: Options
        @Flag(help: "Require a login recent enough for sensitive operations (exit 7 otherwise).") var sensitive = false
        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                let status = sensitive ? try await client.requireRecentLogin() : try await client.loginStatus()
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(status), as: UTF8.self))
            }
        }
    }
}
