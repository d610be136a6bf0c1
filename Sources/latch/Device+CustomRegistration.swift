import ArgumentParser
import Foundation
import LatchClient
import LatchModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Device {
    /// `latch device custom-providers`: the enabled custom identity providers, for `register --custom`.
    struct CustomProviders: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "custom-providers",
            abstract: "List the enabled custom identity providers (for `register --custom`): one line each, id, flow and name separated by tabs.")
        @OptionGroup var options: Options
        func run() async throws {
            try await Device.perform {
                for provider in try await options.client().customProviders() {
                    print("\(provider.id)\t\(provider.flow.rawValue)\t\(provider.name)")
                }
            }
        }
    }

    /// The data of one hook call, as `--data` or a line of input gives it: a JSON object as is, an empty text none,
    /// anything else `{"code": "<text>"}`. Text starting with `{` must be a JSON object.
    static func customData(_ text: String) throws(CustomDataError) -> JSONValue? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return nil }
        guard trimmed.hasPrefix("{") else { return .object(["code": .string(trimmed)]) }
        guard let value = try? JSONValue.parse(Data(trimmed.utf8)), value.objectValue != nil else { throw CustomDataError(text: trimmed) }
        return value
    }

    struct CustomDataError: Error, CustomStringConvertible {
        let text: String
        var description: String { "not a JSON object: \(text.prefix(200))" }
    }

    /// Pretty JSON for people (sorted keys).
    static func pretty(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return String(decoding: value.serialized(), as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }

    static func note(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
}

/// `register --custom`'s ``CustomRegistrationHandler``: each hook call's data from the next `--data`, or else from the
/// next line of standard input (prompted for on a terminal). The server's data and the hook's retryable answers are
/// shown on stderr.
actor TerminalCustomRegistration: CustomRegistrationHandler {
    /// Why the handler cancelled.
    enum Stop: Sendable {
        /// The user ended input on the terminal (Ctrl-D).
        case cancelled
        /// `--data` values, or piped input lines, ran out before this step (1-based hook call number).
        case ranOut(step: String, call: Int)
        /// Piped input gave a line starting with `{` that is not a JSON object.
        case invalid(String)
    }

    private var given: [String]?
    private let terminal: Bool
    private var calls = 0
    private(set) var stop: Stop?

    /// - Parameter given: the `--data` values, in order; nil reads standard input.
    init(given: [String]?) {
        self.given = given
        self.terminal = given == nil && isatty(STDIN_FILENO) != 0
    }

    func initChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
        nextAnswer(step: "init", info, previousError)
    }

    func finishChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
        nextAnswer(step: "complete", info, previousError)
    }

    private func nextAnswer(step: String, _ info: CustomRegistrationInfo, _ previousError: CustomRegistrationRetry?) -> CustomRegistrationAnswer {
        calls += 1
        if let previousError {
            Device.note(
                "the hook refused \(step) (status \(previousError.status)); try again"
                    + (previousError.data.map { ":\n" + Device.pretty($0) } ?? ""))
        } else if step == "complete", let status = info.status {
            Device.note("\(info.providerId): init answered (status \(status))" + (info.data.map { ":\n" + Device.pretty($0) } ?? ""))
        }
        if var values = given {
            guard !values.isEmpty else {
                stop = .ranOut(step: step, call: calls)
                return .cancel
            }
            let text = values.removeFirst()
            given = values
            // Checked by `register`'s validation already.
            return .respond(try? Device.customData(text))
        }
        while true {
            if terminal {
                FileHandle.standardError.write(Data("\(info.providerId) \(step) data (a JSON object, or a value for \"code\"; empty: none): ".utf8))
            }
            guard let line = readLine(strippingNewline: true) else {
                stop = terminal ? .cancelled : .ranOut(step: step, call: calls)
                if terminal { Device.note("") }
                return .cancel
            }
            do {
                return .respond(try Device.customData(line))
            } catch {
                guard terminal else {
                    stop = .invalid("\(error)")
                    return .cancel
                }
                Device.note("\(error)")
            }
        }
    }
}

extension Device.Register {
    /// `register --custom`: runs the registration with ``TerminalCustomRegistration``. Input that ran out (or is not
    /// JSON) is a usage error (exit 2) after the transaction was cancelled.
    static func registerCustom(_ client: UserClient, provider: String, data: [String]) async throws -> CustomRegistrationResult {
        let handler = TerminalCustomRegistration(given: data.isEmpty ? nil : data)
        let result: CustomRegistrationResult
        do {
            result = try await client.registerWithCustomProvider(provider, handler: handler)
        } catch {
            switch error.code {
            case .serviceUnavailable:
                // The SDK's code covers the hook (down, or too slow) and Latch itself (busy): say both, and how to go on.
                Device.note(
                    """
                    error: service unavailable: \(provider)'s registration service (its hook) could not be reached or did not answer in time, \
                    or Latch is busy. Run the same command again later: a complete already sent is resent as it was, not asked for again.
                    """)
                throw ExitCode(ExitStatus.unreachable)
            case .customRegistrationCancelled:
                switch await handler.stop {
                case .ranOut(let step, let call)?:
                    Device.note(
                        data.isEmpty
                            ? "error: standard input ended before hook call \(call) (\(step)): give its data on a line, or use --data"
                            : "error: hook call \(call) (\(step)) needs one more --data (\(data.count) given)")
                    throw ExitCode(ExitStatus.usage)
                case .invalid(let message)?:
                    Device.note("error: standard input: \(message)")
                    throw ExitCode(ExitStatus.usage)
                case .cancelled?, nil:
                    throw error
                }
            default:
                throw error
            }
        }
        if let data = result.data { Device.note("the hook answered (status \(result.status)):\n" + Device.pretty(data)) }
        return result
    }
}
