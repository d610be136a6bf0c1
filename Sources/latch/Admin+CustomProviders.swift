import ArgumentParser
import Foundation
import LatchModel

extension Admin {
    // MARK: Custom identity providers

    /// `latch admin custom-providers`: the operator's hooks that decide custom registrations
    /// (`/admin/v1/custom-providers…`).
    struct CustomProviders: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "custom-providers", abstract: "Custom identity providers: the operator's HTTP hooks that decide custom registrations.",
            subcommands: [Add.self, List.self, Get.self, Update.self, Delete.self, Transactions.self])

        /// `--enabled` or `--disabled`.
        enum State: String, EnumerableFlag {
            case enabled, disabled

            static func help(for value: State) -> ArgumentHelp? {
                switch value {
                case .enabled: "Apps may offer it (the default for a new provider)."
                case .disabled: "Apps may not start or continue registrations with it."
                }
            }
        }

        static let flows = ["one_step", "two_step"]

        /// The hook secret from `--hook-secret` or `--hook-secret-file` (its final line break dropped), if given.
        static func secret(_ value: String?, file: String?) throws -> String? {
            guard value == nil || file == nil else { throw ValidationError("give --hook-secret or --hook-secret-file, not both") }
            guard let file else { return value }
            var text = try InputFile.text(file, option: "--hook-secret-file", hint: "It holds the secret the hook checks signatures with.")
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            return text
        }

        static func checkFlow(_ flow: String?) throws {
            if let flow, !flows.contains(flow) { throw ValidationError("--flow must be one_step or two_step, not \(flow)") }
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a custom identity provider: the hook Latch POSTs each registration step to, signed with its secret.")
            @OptionGroup var server: ServerOptions
            @Option(help: "Its id, what apps name as identityProvider (1-64 of A-Z a-z 0-9 . _ -).") var id: String
            @Option(help: "Its name, shown to people.") var name: String
            @Option(help: "one_step (complete only) or two_step (init, then complete).") var flow: String
            @Option(help: "Where Latch POSTs each step (http or https).") var hookUrl: String
            @Option(help: "The HMAC-SHA256 secret (16-512 bytes) the hook checks Latch-Signature with; never shown again.") var hookSecret: String?
            @Option(help: "A file holding the hook secret (instead of --hook-secret; its final line break is dropped).") var hookSecretFile: String?
            @Option(help: "Seconds one hook call may take (1-60, default 5).") var timeout: Int?
            @Option(help: "Further attempts after a network error, a timeout or HTTP 5xx/429 (0-5, default 2).") var retries: Int?
            @Option(help: "Seconds a transaction stays usable (30-86400, default 600).") var transactionLifetime: Int?
            @Option(help: "An attribute of the hook's user kept as a claim (repeatable).") var allowedClaim: [String] = []
            @Flag var state: State?

            func validate() throws {
                try CustomProviders.checkFlow(flow)
                guard (hookSecret == nil) != (hookSecretFile == nil) else { throw ValidationError("give --hook-secret or --hook-secret-file") }
            }

            func run() async throws {
                guard let secret = try CustomProviders.secret(hookSecret, file: hookSecretFile) else {
                    throw ValidationError("give --hook-secret or --hook-secret-file")
                }
                let body = AdminCustomProviderRequest(
                    id: id, name: name, flow: flow, hookURL: hookUrl, hookSecret: secret, timeout: timeout, retries: retries,
                    transactionLifetime: transactionLifetime, allowedClaims: allowedClaim.isEmpty ? nil : allowedClaim,
                    enabled: state.map { $0 == .enabled })
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("POST", "/admin/v1/custom-providers", body: body))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List custom identity providers (never their secrets).")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/custom-providers")) }
        }

        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show one custom identity provider.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws {
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/custom-providers/\(id.pathEscaped)"))
            }
        }

        struct Update: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Change a custom identity provider: only what is given changes (a new secret applies to the next hook call).")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            @Option(help: "Its name, shown to people.") var name: String?
            @Option(help: "one_step or two_step.") var flow: String?
            @Option(help: "Where Latch POSTs each step (http or https).") var hookUrl: String?
            @Option(help: "A new hook secret (16-512 bytes).") var hookSecret: String?
            @Option(help: "A file holding the new hook secret (its final line break is dropped).") var hookSecretFile: String?
            @Option(help: "Seconds one hook call may take (1-60).") var timeout: Int?
            @Option(help: "Further attempts after a network error, a timeout or HTTP 5xx/429 (0-5).") var retries: Int?
            @Option(help: "Seconds a transaction stays usable (30-86400).") var transactionLifetime: Int?
            @Option(help: "An attribute of the hook's user kept as a claim (repeatable; replaces the list).") var allowedClaim: [String] = []
            @Flag(help: "Keep no attributes as claims.") var noAllowedClaims = false
            @Flag var state: State?

            func validate() throws {
                try CustomProviders.checkFlow(flow)
                guard hookSecret == nil || hookSecretFile == nil else { throw ValidationError("give --hook-secret or --hook-secret-file, not both") }
                guard allowedClaim.isEmpty || !noAllowedClaims else { throw ValidationError("give --allowed-claim or --no-allowed-claims, not both") }
            }

            func run() async throws {
                let patch = AdminCustomProviderPatch(
                    name: name, flow: flow, hookURL: hookUrl, hookSecret: try CustomProviders.secret(hookSecret, file: hookSecretFile), timeout: timeout,
                    retries: retries, transactionLifetime: transactionLifetime,
                    allowedClaims: noAllowedClaims ? [] : allowedClaim.isEmpty ? nil : allowedClaim, enabled: state.map { $0 == .enabled })
                guard patch != AdminCustomProviderPatch() else { throw ValidationError("give something to change (see --help)") }
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("PATCH", "/admin/v1/custom-providers/\(id.pathEscaped)", body: patch))
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove a custom identity provider and its transactions (the users it registered stay).")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            func run() async throws { _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/custom-providers/\(id.pathEscaped)") }
        }

        struct Transactions: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "A provider's registration transactions (newest first) and how many are open, completed, cancelled and failed.")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            @Option(help: "Only transactions in this state: open, completed, cancelled or failed.") var state: String?
            @Option(help: "At most this many transactions.") var limit: Int?

            func validate() throws {
                if let state, !["open", "completed", "cancelled", "failed"].contains(state) {
                    throw ValidationError("--state must be open, completed, cancelled or failed, not \(state)")
                }
            }

            func run() async throws {
                let query = [state.map { "state=\($0.pathEscaped)" }, limit.map { "limit=\($0)" }].compactMap { $0 }.joined(separator: "&")
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send(
                        "GET", "/admin/v1/custom-providers/\(id.pathEscaped)/transactions" + (query.isEmpty ? "" : "?" + query)))
            }
        }
    }
}
