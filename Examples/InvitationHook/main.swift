// A one-step custom-registration hook: the user registers with an invitation code, each code once.
//
//   HOOK_SECRET=… INVITATION_CODES=WELCOME1,WELCOME2 swift run InvitationHook
//
// Environment: HOOK_SECRET (required: the provider's hookSecret), INVITATION_CODES (comma-separated),
// HOOK_PORT (default 8081; 0 picks a free one), HOOK_HOST (default 127.0.0.1). The first line on stdout is
// `listening on <port>`. Codes are remembered in memory only: a restart makes used codes usable again.
//
// Latch POSTs {step, transactionId, identityProvider, clientId, data, initData?} to `/`:
//   complete {code, username}  known unused code → 2000 with the user; the code is used up
//                              unknown code      → 4001 (the app may try another code)
//                              used code         → 5001 (restart)
//   init                                         → 5002 (this is a one-step provider)
// A retried complete of a transaction that succeeded (Latch retries after a network error) gets the same success.

import Foundation
import HTTPTypes
import Hummingbird
import LatchHookKit
import LatchModel
import Logging
import NIOCore

let environment = ProcessInfo.processInfo.environment

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("invitation-hook: \(message)\n".utf8))
    exit(2)
}

guard let secret = environment["HOOK_SECRET"], !secret.isEmpty else { fail("set HOOK_SECRET to the provider's hook secret") }
guard let port = Int(environment["HOOK_PORT"] ?? "8081"), (0...65535).contains(port) else { fail("HOOK_PORT is not a port number") }
let host = environment["HOOK_HOST"] ?? "127.0.0.1"
let codes = Set((environment["INVITATION_CODES"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })

// MARK: - State

struct Invitations {
    var unused: Set<String>
    var used: Set<String> = []
    /// The success answered to each transaction, answered again when Latch retries it.
    var completed: [String: HookResponse] = [:]
}

let invitations = Locked(Invitations(unused: codes))
let replays = HookReplayGuard()

/// The answer to one verified request.
@Sendable func answer(_ request: HookRequest) -> HookResponse {
    guard request.step == .complete else { return .restart(5002, message: "one-step provider") }
    return invitations.withLock { state in
        if let earlier = state.completed[request.transactionId] { return earlier }
        guard let code = request.data["code"]?.stringValue, let username = request.data["username"]?.stringValue, !username.isEmpty
        else { return .retry(4002, message: "an invitation code and a username are needed") }
        if state.unused.remove(code) != nil {
            state.used.insert(code)
            let success = HookResponse.success(user: HookUser(username: username, attributes: ["invitation": .string(code)], amr: ["inv"]))
            state.completed[request.transactionId] = success
            return success
        }
        if state.used.contains(code) { return .restart(5001, message: "this invitation was used") }
        return .retry(4001, message: "unknown invitation code")
    }
}

// MARK: - HTTP

/// A JSON response.
@Sendable func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let body = (try? encoder.encode(value)) ?? Data("{}".utf8)
    return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
}

@Sendable func refuse(_ status: HTTPResponse.Status, _ error: String, _ message: String) -> Response {
    json(status, ["error": error, "message": message])
}

let router = Router()
router.post("/") { request, _ -> Response in
    let body = Array(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
    let idempotencyKey = request.headers[HTTPField.Name(HookSignature.idempotencyKeyHeaderName)!]
    // 1. The signature, over the bytes as received, and no replay inside the window.
    guard let signature = request.headers[HTTPField.Name(HookSignature.headerName)!] else {
        return refuse(.unauthorized, "invalid_signature", "the Latch-Signature header is missing")
    }
    let verified: HookSignature.Verified
    do throws(HookSignatureError) {
        verified = try HookSignature.verify(header: signature, body: body, secret: secret)
    } catch {
        return refuse(.unauthorized, "invalid_signature", error.description)
    }
    switch replays.admit(verified, idempotencyKey: idempotencyKey) {
    case .accepted: break
    case .replayed: return refuse(.unauthorized, "replayed_request", "this request was seen already")
    case .full: return refuse(.serviceUnavailable, "busy", "too many requests in the replay window; try again")
    }
    // 2. The body, and an Idempotency-Key that agrees with it (the key is not signed: the body's transaction counts).
    guard let hookRequest = try? JSONDecoder().decode(HookRequest.self, from: Data(body)) else {
        return refuse(.badRequest, "invalid_request", "the body is not a hook request")
    }
    guard let key = idempotencyKey.flatMap(HookIdempotencyKey.init), key.transactionId == hookRequest.transactionId, key.step == hookRequest.step
    else { return refuse(.badRequest, "invalid_request", "the Idempotency-Key is missing or names another transaction or step") }
    // 3. The answer.
    return json(.ok, answer(hookRequest))
}

var logger = Logger(label: "invitation-hook")
logger.logLevel = .warning
let app = Application(
    router: router,
    configuration: .init(address: .hostname(host, port: port), serverName: "InvitationHook"),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? port)\n".utf8))
    },
    logger: logger)
try await app.runService()
