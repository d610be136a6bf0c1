import ArgumentParser
import Foundation
import LatchClient
import LatchModel

extension Device {
    /// `latch device fido …`: FIDO authenticators through the SDK — a PIN authenticator (`--pin`) or a software key
    /// behind a software user verifier.
    struct Fido: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "FIDO authenticators: sign up (a new user), register (signed in), sign in, list, delete, change the PIN, PIN status, server policy.",
            subcommands: [SignUp.self, Register.self, SignIn.self, List.self, Delete.self, PinChange.self, Status.self, Policy.self])

        /// The authenticator: a PIN authenticator when a PIN is given, else the software one.
        static func authenticator(pin: String?) -> any FidoAuthenticator {
            pin == nil ? SoftwareAuthenticator() : PinAuthenticator()
        }

        static func describe(_ info: FidoAuthenticatorInfo) -> String {
            var line = "\(info.id)  \(info.name)  aaguid \(info.aaguid)  \(info.format)"
            if let status = info.pinStatus { line += "  pin \(Device.Fido.describe(status))" }
            return line
        }

        static func describe(_ status: FidoPinStatus) -> String {
            "\(status.state) (remaining tries \(status.remainingTries), cool-down \(status.coolDown) s)" + (status.bound == false ? ", unbound: re-enrol to bind it to this device" : "")
        }

        struct SignUp: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "sign-up",
                abstract: "Passwordless sign-up: a new user whose first credential is this device's authenticator (--pin for a PIN one).")
            @OptionGroup var options: Options
            @Option(help: "The PIN (digits, within the server's PIN policy): a PIN authenticator.") var pin: String?
            @Option(help: "The username to ask for (default: the server uses the new user's id).") var username: String?
            @Option(help: "A name for the authenticator.") var name: String?
            func run() async throws {
                try await Device.perform {
                    let username = try await options.client().signUpWithFido(Fido.authenticator(pin: pin), pin: pin, username: username, name: name)
                    print("signed up \(username)")
                }
            }
        }

        struct Register: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Register an authenticator to the signed-in user: a PIN authenticator with --pin, else a software key.")
            @OptionGroup var options: Options
            @Option(help: "The PIN (digits, within the server's PIN policy): registers a PIN authenticator.") var pin: String?
            @Option(help: "A name for it.") var name: String?
            func run() async throws {
                try await Device.perform {
                    let info = try await options.client().registerFidoAuthenticator(Fido.authenticator(pin: pin), pin: pin, name: name)
                    print("registered \(Fido.describe(info))")
                }
            }
        }

        struct SignIn: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "sign-in", abstract: "Sign in with this device's authenticator (--pin for the PIN authenticator). Exit 9: wrong PIN or locked.")
            @OptionGroup var options: Options
            @Option(help: "The PIN of this device's PIN authenticator.") var pin: String?
            func run() async throws {
                try await Device.perform {
                    let client = try options.client()
                    try await client.signInWithFido(Fido.authenticator(pin: pin), pin: pin)
                    // The username, as `latch device sign-in` prints it (the user id when the tokens carry none).
                    let username = try? await client.userClaim("username")?.stringValue
                    let name = username != nil ? username : try? await client.userClaim("sub")?.stringValue
                    print("signed in" + (name.map { " as \($0)" } ?? ""))
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the signed-in user's authenticators.")
            @OptionGroup var options: Options
            @Flag(help: "Print JSON.") var json = false
            func run() async throws {
                try await Device.perform {
                    let list = try await options.client().fidoAuthenticators()
                    if json {
                        let encoder = JSONEncoder()
                        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                        print(String(decoding: try encoder.encode(FidoAuthenticatorList(authenticators: list)), as: UTF8.self))
                    } else {
                        list.forEach { print(Fido.describe($0)) }
                    }
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Deregister one authenticator, or all with --all (needs a recent sign-in).")
            @OptionGroup var options: Options
            @Argument(help: "The authenticator's id (latch device fido list).") var id: String?
            @Flag(help: "Every authenticator of the user.") var all = false
            func validate() throws {
                guard (id == nil) != !all else { throw ValidationError("give an authenticator id or --all") }
            }
            func run() async throws {
                try await Device.perform {
                    let client = try options.client()
                    if let id {
                        try await client.deleteFidoAuthenticator(id: id)
                    } else {
                        try await client.deleteAllFidoAuthenticators()
                    }
                    print("deleted")
                }
            }
        }

        struct PinChange: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "pin-change", abstract: "Change the PIN of this device's PIN authenticator (signed in).")
            @OptionGroup var options: Options
            @Option(help: "The current PIN.") var pin: String
            @Option(help: "The new PIN.") var newPin: String
            func run() async throws {
                try await Device.perform {
                    let info = try await options.client().changePin(PinAuthenticator(), oldPin: pin, newPin: newPin)
                    print("PIN changed for \(info.id)")
                }
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The server's count for this device's PIN authenticator.")
            @OptionGroup var options: Options
            func run() async throws {
                try await Device.perform { print(Fido.describe(try await options.client().pinStatus())) }
            }
        }

        struct Policy: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The server's FIDO policy (JSON).")
            @OptionGroup var options: Options
            func run() async throws {
                try await Device.perform {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    print(String(decoding: try encoder.encode(try await options.client().fidoPolicy()), as: UTF8.self))
                }
            }
        }
    }
}
