import ArgumentParser
import Foundation
import HTTPTypes
import Hummingbird
import LatchClient
import LatchModel
import Logging
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Device {
    /// `latch device federated-sign-in`: browser sign-in through the deployment's upstream identity provider, the way a
    /// native app does it (RFC 8252): a loopback redirect URI on 127.0.0.1, the system browser, PKCE.
    struct FederatedSignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "federated-sign-in", abstract: "Sign in through the browser, at the deployment's upstream identity provider.",
            discussion: """
                Listens on 127.0.0.1 (a free port unless --port), prints the authorization URL (and opens it in a browser \
                unless --no-open), and waits for the browser to come back to http://127.0.0.1:<port>/callback. The client \
                must have http://127.0.0.1/callback among its redirect URIs (any port matches, RFC 8252 §7.3) and an upstream \
                identity provider: `latch admin` PATCH /admin/v1/clients/{id} {"redirectUris": [...], "upstreamIdps": [...]}. \
                Only GET /callback carrying this sign-in's state is answered; then the listener closes. Exit 6: the sign-in \
                was refused (the answer's error is shown); exit 11: no answer within --timeout seconds.
                """)
        @OptionGroup var options: Options
        @Option(help: "The upstream identity provider's id (idp_hint): go straight there, without Latch's chooser.") var idp: String?
        @Option(help: "prompt: login (sign in at the identity provider again), none or select_account.") var prompt: String?
        @Option(help: "login_hint passed on to the identity provider.") var loginHint: String?
        @Option(help: "The loopback port to listen on (default: a free one).") var port: Int?
        @Option(help: "Seconds to wait for the browser.") var timeout: Int = 300
        @Flag(name: .customLong("no-open"), help: "Only print the URL; do not start a browser.") var noOpen = false

        func validate() throws {
            if let port, !(1...65535).contains(port) { throw ValidationError("--port must be 1–65535") }
            guard (1...86_400).contains(timeout) else { throw ValidationError("--timeout must be 1–86400 seconds") }
            if let prompt, !["login", "none", "select_account", "consent"].contains(prompt) {
                throw ValidationError("--prompt must be login, none, select_account or consent")
            }
        }

        func run() async throws {
            try await Device.perform {
                let client = try options.client()
                let outcome = try await LoopbackRedirect.run(port: port ?? 0, timeout: .seconds(timeout)) { redirectURI in
                    let url = try await client.federatedSignInURL(redirectURI: redirectURI, idpHint: idp, prompt: prompt, loginHint: loginHint)
                    print("Open this URL in a browser:")
                    print(url.absoluteString)
                    fflush(nil)  // all output streams (stdout is fully buffered into a file or pipe)
                    if !noOpen { Device.openInBrowser(url) }
                    return url
                } handle: { url in
                    try await client.processFederatedSignInTokens(url: url)
                    let claims = try await client.userClaims()
                    return claims["username"]?.stringValue ?? claims["preferred_username"]?.stringValue ?? claims["sub"]?.stringValue ?? "?"
                }
                guard let outcome else {
                    FileHandle.standardError.write(Data("error: no answer from the browser within \(timeout) s\n".utf8))
                    await client.cancelFederatedSignIn()
                    throw ExitCode(Device.exitCode(.federatedSignInCancelled))
                }
                print("signed in as \(try outcome.get())")
            }
        }
    }

    /// `latch device federated-sign-out`: the URL that ends the browser's web session (and the identity provider's).
    struct FederatedSignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "federated-sign-out", abstract: "Print the URL that signs the browser out of Latch and the identity provider.",
            discussion: """
                The app's tokens stay valid (run `latch device sign-out` for those). --post-logout-redirect-uri must be \
                registered for the client (postLogoutRedirectUris).
                """)
        @OptionGroup var options: Options
        @Option(help: "Where the browser goes afterwards (registered for the client).") var postLogoutRedirectUri: String
        @Option(help: "A value echoed back to that URI as state.") var state: String?
        func run() async throws {
            try await Device.perform {
                let url = try await options.client().federatedSignOutURL(postLogoutRedirectURI: postLogoutRedirectUri, state: state)
                print(url.absoluteString)
            }
        }
    }

    /// Starts the system's browser on `url` (`open` on macOS, `xdg-open` elsewhere); failures are ignored (the URL is
    /// printed). `posix_spawnp`, not `Process`: see `ChildProcess` in LatchTesting.
    static func openInBrowser(_ url: URL) {
        #if os(macOS)
        let opener = "open"
        #else
        let opener = "xdg-open"
        #endif
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = [strdup(opener), strdup(url.absoluteString), nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        _ = posix_spawnp(&pid, opener, &actions, nil, argv, environ)
    }
}

/// The loopback redirect of a native app's browser sign-in (RFC 8252 §7.3): an HTTP listener on 127.0.0.1 that answers
/// the first `GET /callback` carrying the sign-in's `state`, shows the browser the outcome, and closes.
enum LoopbackRedirect {
    /// What the listener shares with its route.
    final class Exchange: Sendable {
        let redirectURI: String
        /// The `state` of the sign-in URL: a callback without it (another tab, a stray request) is refused.
        let state = Locked<String?>(nil)
        let answered = Locked(false)
        let outcomes: AsyncStream<Result<String, any Error>>
        let deliver: AsyncStream<Result<String, any Error>>.Continuation

        init(redirectURI: String) {
            self.redirectURI = redirectURI
            (outcomes, deliver) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        }

        /// Claims the one answer: true the first time.
        func claim() -> Bool {
            answered.withLock { was in
                let first = !was
                was = true
                return first
            }
        }
    }

    /// Listens on 127.0.0.1:`port` (0: a free port), calls `start` with the redirect URI (which must return the URL
    /// the browser opens), then waits at most `timeout` for the callback, which `handle` processes: its result is shown
    /// in the browser and returned. Nil when no callback came in time.
    static func run(
        port: Int, timeout: Duration, start: @Sendable (String) async throws -> URL, handle: @escaping @Sendable (URL) async throws -> String
    ) async throws -> Result<String, any Error>? {
        let quiet = Logger(label: "latch.loopback-redirect", factory: { _ in SwiftLogNoOpLogHandler() })
        let (ports, portFound) = AsyncStream.makeStream(of: Int.self)
        let router = Router()
        let box = ExchangeBox()
        router.get("callback") { request, _ -> Response in
            guard let current = box.exchange.withLock({ $0 }) else { return page(.serviceUnavailable, "Not ready yet.") }
            guard let expected = current.state.withLock({ $0 }), let given = request.uri.queryParameters["state"].map(String.init),
                given == expected
            else { return page(.badRequest, "This is not the answer to the sign-in this command started; it was ignored.") }
            guard current.claim() else { return page(.conflict, "This sign-in was answered already.") }
            let query = request.uri.query ?? ""
            guard let url = URL(string: current.redirectURI + "?" + query) else {
                current.deliver.yield(.failure(UserClientError.invalidInput("the redirect's query is not a valid URL")))
                return page(.badRequest, "The answer could not be read.")
            }
            do {
                let name = try await handle(url)
                current.deliver.yield(.success(name))
                return page(.ok, "Signed in as \(name). You can close this window.")
            } catch {
                current.deliver.yield(.failure(error))
                return page(.badRequest, "Sign-in failed: \(error)")
            }
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { channel in portFound.yield(channel.localAddress?.port ?? 0) }, logger: quiet)
        let group = ServiceGroup(configuration: .init(services: [app], logger: quiet))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { portFound.finish() }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let bound = await iterator.next(), bound > 0 else {
                // The server stopped before listening (the port is taken): its error.
                do {
                    try await tasks.waitForAll()
                } catch {
                    throw ListenFailure(description: "cannot listen on 127.0.0.1:\(port): \(error)")
                }
                throw ListenFailure(description: "cannot listen on 127.0.0.1:\(port)")
            }
            let current = Exchange(redirectURI: "http://127.0.0.1:\(bound)/callback")
            box.exchange.withLock { $0 = current }
            let outcome: Result<String, any Error>?
            do {
                let url = try await start(current.redirectURI)
                let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value
                current.state.withLock { $0 = state }
                outcome = try await withThrowingTaskGroup(of: Result<String, any Error>?.self) { race in
                    race.addTask {
                        for await outcome in current.outcomes { return outcome }
                        return nil
                    }
                    race.addTask {
                        try await Task.sleep(for: timeout)
                        return nil
                    }
                    let first = try await race.next() ?? nil
                    race.cancelAll()
                    return first
                }
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            // The answer's page is written before the connection closes (a graceful shutdown finishes requests in flight).
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return outcome
        }
    }

    struct ListenFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Where the route finds the exchange once the port, hence the redirect URI, is known.
    final class ExchangeBox: Sendable {
        let exchange = Locked<Exchange?>(nil)
    }

    /// A tiny HTML page for the browser.
    static func page(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        let html = """
            <!doctype html><html><head><meta charset="utf-8"><title>Latch</title></head>\
            <body><p>\(escaped)</p></body></html>
            """
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }
}
