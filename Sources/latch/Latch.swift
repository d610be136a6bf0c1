import ArgumentParser
import Foundation
import LatchApp
import LatchModel

@main
struct Latch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latch",
        abstract: "Latch: a self-hosted identity service for mobile apps.",
        discussion: """
            Exit codes, the same for every subcommand: 0 done; 1 the server answered an error, or another failure;
            2 usage or configuration (a bad flag, value, or file); 3 the server or database cannot be reached (latch health: not ready);
            4 not registered; 5 not signed in; 6 not authorized; 7 needs a more recent sign-in; 8 already registered;
            9 a wrong PIN (or a PIN authenticator cooling down or locked out); 10 a custom registration must start again;
            11 a custom registration was cancelled; 12 the audit log's chain does not verify (latch admin audit verify);
            13 the data folder holds no deployment (latch admin bootstrap without --init, backup, latch keys);
            14 the command does not apply to this deployment (latch admin backup on PostgreSQL).
            """,
        version: "latch \(LatchVersion.current)",
        subcommands: [Serve.self, Health.self, Admin.self, Device.self, Keys.self, Bench.self, AttestationCommand.self, WebAuthnCommand.self])

    /// ArgumentParser's `main`, with usage errors exiting 2 (not sysexits' 64) and a bad configuration value
    /// reported as itself — key, source, problem — instead of with the usage text.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigurationError {
            fail("\(error)", ExitStatus.usage)
        } catch let error as InputFileError {
            fail("\(error)", ExitStatus.usage)
        } catch let error as BackupFormatError {
            fail("the backup cannot be restored: \(error)", ExitStatus.usage)
        } catch let error as NoDeploymentError {
            fail("\(error)", ExitStatus.noDeployment)
        } catch let error as BackupNotApplicableError {
            fail("\(error)", ExitStatus.notApplicable)
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }

    /// `error: <message>` on stderr, then exit with `status`.
    static func fail(_ message: String, _ status: Int32) -> Never {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        Foundation.exit(status)
    }
}
