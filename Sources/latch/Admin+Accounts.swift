import ArgumentParser
import Foundation
import LatchModel

extension Admin {
    // MARK: Admin accounts

    /// `latch admin admins`: admin accounts and their roles (`/admin/v1/admins…`, owners only for changes).
    struct Admins: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "admins", abstract: "Admin accounts: who holds admin tokens, with which role.", subcommands: [Add.self, List.self, Delete.self])

        /// Parses `--role`.
        static func role(_ text: String) throws -> AdminRole {
            guard let role = AdminRole(rawValue: text) else {
                throw ValidationError("--role must be one of: " + AdminRole.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return role
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create an admin account (owners only). Give it a token with `latch admin tokens create --account ID`.")
            @OptionGroup var server: ServerOptions
            @Option(help: "1–64 printable characters, unique ignoring case.") var username: String
            @Option(help: "owner, admin, support or auditor.") var role: String
            func run() async throws {
                let role = try Admins.role(role)
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send("POST", "/admin/v1/admins", body: AdminAccountRequest(username: username, role: role)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List admin accounts.")
            @OptionGroup var server: ServerOptions
            func run() async throws { AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/admins")) }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Delete an admin account and revoke its tokens (owners only; never the last owner).")
            @OptionGroup var server: ServerOptions
            @Argument var id: String
            @Flag(help: "Also delete what it owns (test keys, signing certificates); without it, they are listed and nothing is deleted.")
            var deleteOwned = false
            @Flag(help: "Delete it even if it is the account this command's token belongs to (later commands with it are refused).")
            var force = false
            func run() async throws {
                let query = [force ? "force=true" : nil, deleteOwned ? "deleteOwned=true" : nil].compactMap { $0 }.joined(separator: "&")
                _ = try await AdminHTTP(options: server).send("DELETE", "/admin/v1/admins/\(id.pathEscaped)" + (query.isEmpty ? "" : "?" + query))
            }
        }
    }
}
