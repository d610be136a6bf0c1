import ArgumentParser
import Foundation
import LatchModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Exit codes of every `latch` subcommand, stable for scripts (the table is in `latch --help` and the README).
enum ExitStatus {
    /// The server answered with an error code (printed on stderr as `error: <code>: <description>`), or another failure.
    static let serverError: Int32 = 1
    /// Usage or configuration: a bad flag, value or file.
    static let usage: Int32 = 2
    /// The server could not be reached or answered something that is not Latch.
    static let unreachable: Int32 = 3
    /// `latch admin audit verify`: the audit log's chain does not verify.
    static let auditBroken: Int32 = 12
    /// A command that works on a deployment's data folder found none there (`--init` makes one, where offered).
    static let noDeployment: Int32 = 13
    /// The command does not apply to this deployment (`latch admin backup` on PostgreSQL).
    static let notApplicable: Int32 = 14
}

/// Where `latch admin` sends its requests.
struct ServerOptions: ParsableArguments {
    @Option(help: "Latch base URL (env LATCH_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["LATCH_SERVER"] ?? "http://localhost:8080"

    @Option(help: "Admin token (env LATCH_ADMIN_TOKEN).")
    var token: String?

    var adminToken: String? { token ?? ProcessInfo.processInfo.environment["LATCH_ADMIN_TOKEN"] }
}

/// A minimal JSON-over-HTTP client for the admin API.
struct AdminHTTP {
    let options: ServerOptions

    func send(_ method: String, _ path: String, body: (some Encodable)? = Optional<String>.none) async throws -> Data {
        guard let base = URL(string: options.server), let url = URL(string: path, relativeTo: base) else {
            throw ValidationError("--server must be a URL")
        }
        guard let token = options.adminToken else { throw ValidationError("an admin token is required (--token or LATCH_ADMIN_TOKEN)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try JSONEncoder().encode(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            FileHandle.standardError.write(Data("error: cannot reach \(options.server): \(error.localizedDescription)\n".utf8))
            throw ExitCode(ExitStatus.unreachable)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            if let error = try? JSONDecoder().decode(ErrorResponse.self, from: data) {
                FileHandle.standardError.write(Data("error: \(error.error.rawValue): \(error.errorDescription ?? "")\n".utf8))
                throw ExitCode(ExitStatus.serverError)
            }
            FileHandle.standardError.write(Data("error: HTTP \(status) from \(options.server)\n".utf8))
            throw ExitCode(ExitStatus.unreachable)
        }
        return data
    }

    /// Pretty-prints a JSON answer.
    static func printJSON(_ data: Data) {
        guard !data.isEmpty else { return }
        if let object = try? JSONSerialization.jsonObject(with: data),
            let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        {
            print(String(decoding: pretty, as: UTF8.self))
        } else {
            print(String(decoding: data, as: UTF8.self))
        }
    }
}
