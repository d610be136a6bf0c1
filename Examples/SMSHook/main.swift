// A two-step custom-registration hook: `init` "sends" a 6-digit code to a phone, `complete` checks it.
//
//   HOOK_SECRET=… SMS_OUTBOX=/tmp/sms.txt swift run SMSHook
//
// Environment: HOOK_SECRET (required: the provider's hookSecret), SMS_OUTBOX (a file the "SMS" lines
// `<transactionId> <phone> <code>` are appended to; default stdout), SMS_FIXED_CODE (a fixed code, for tests),
// HOOK_PORT (default 8082; 0 picks a free one), HOOK_HOST (default 127.0.0.1). The first line on stdout is
// `listening on <port>`. Transactions live in memory only.
//
// Latch POSTs {step, transactionId, identityProvider, clientId, data, initData?} to `/`:
//   init {phone}      → 2000 {message: "code sent", phoneHint: "…67"}; 4002 for a phone that is not +digits
//   complete {code}   right code → 2000 with the user (username = the phone)
//                     wrong code → 4001 {remainingAttempts} twice, then 5001 "too many attempts"
//                     a transaction init never saw → 5003
// A retried init with the same phone answers the same without sending another code; a retried complete of a
// transaction that succeeded answers the same success.

import Foundation
import HTTPTypes
import Hummingbird
import LatchHookKit
import LatchModel
import Logging
import NIOCore

let environment = ProcessInfo.processInfo.environment

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("sms-hook: \(message)\n".utf8))
    exit(2)
}

guard let secret = environment["HOOK_SECRET"], !secret.isEmpty else { fail("set HOOK_SECRET to the provider's hook secret") }
guard let port = Int(environment["HOOK_PORT"] ?? "8082"), (0...65535).contains(port) else { fail("HOOK_PORT is not a port number") }
let host = environment["HOOK_HOST"] ?? "127.0.0.1"
let fixedCode = environment["SMS_FIXED_CODE"]
if let fixedCode, fixedCode.count != 6 || !fixedCode.allSatisfy(\.isASCII) || !fixedCode.allSatisfy(\.isNumber) {
    fail("SMS_FIXED_CODE must be 6 digits")
}
let outbox: FileHandle
if let path = environment["SMS_OUTBOX"] {
    guard FileManager.default.fileExists(atPath: path) || FileManager.default.createFile(atPath: path, contents: nil),
        let handle = FileHandle(forWritingAtPath: path)
    else { fail("SMS_OUTBOX \(path) cannot be written") }
    outbox = handle
} else {
    outbox = FileHandle.standardOutput
}

/// Wrong codes allowed per transaction: the third ends it.
let maximumAttempts = 3

// MARK: - State

struct Transaction {
    var phone: String
    var code: String
    var wrongCodes = 0
    /// Set once the transaction is decided (the user, or "too many attempts"), answered again on a retry.
    var final: HookResponse?
}

let transactions = Locked([String: Transaction]())
let replays = HookReplayGuard()

@Sendable func newCode() -> String {
    if let fixedCode { return fixedCode }
    var generator = SystemRandomNumberGenerator()
    let number = Int.random(in: 0..<1_000_000, using: &generator)
    return String(repeating: "0", count: 6 - String(number).count) + String(number)
}

@Sendable func isPhoneNumber(_ text: String) -> Bool {
    let digits = text.hasPrefix("+") ? text.dropFirst() : Substring(text)
    return (6...15).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber }
}

/// The answer to one verified request.
@Sendable func answer(_ request: HookRequest) -> HookResponse {
    transactions.withLock { transactions in
        switch request.step {
        case .`init`:
            guard let phone = request.data["phone"]?.stringValue, isPhoneNumber(phone) else {
                return .retry(4002, message: "a phone number (+ and 6 to 15 digits) is needed")
            }
            let sent = HookResponse.success(data: ["message": "code sent", "phoneHint": .string("…" + phone.suffix(2))])
            if let existing = transactions[request.transactionId] {
                return existing.phone == phone ? sent : .restart(5004, message: "this transaction sent a code to another phone")
            }
            let code = newCode()
            transactions[request.transactionId] = Transaction(phone: phone, code: code)
            // The "SMS".
            _ = try? outbox.seekToEnd()
            outbox.write(Data("\(request.transactionId) \(phone) \(code)\n".utf8))
            return sent

        case .complete:
            guard var transaction = transactions[request.transactionId] else { return .restart(5003, message: "unknown transaction") }
            if let final = transaction.final { return final }
            guard let code = request.data["code"]?.stringValue else { return .retry(4002, message: "the code is needed") }
            let final: HookResponse
            if code == transaction.code {
                final = .success(user: HookUser(username: transaction.phone, attributes: ["phone": .string(transaction.phone)], amr: ["sms"]))
            } else {
                transaction.wrongCodes += 1
                guard transaction.wrongCodes >= maximumAttempts else {
                    transactions[request.transactionId] = transaction
                    return .retry(4001, message: "wrong code", ["remainingAttempts": .int(Int64(maximumAttempts - transaction.wrongCodes))])
                }
                final = .restart(5001, message: "too many attempts")
            }
            transaction.final = final
            transactions[request.transactionId] = transaction
            return final
        }
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

var logger = Logger(label: "sms-hook")
logger.logLevel = .warning
let app = Application(
    router: router,
    configuration: .init(address: .hostname(host, port: port), serverName: "SMSHook"),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? port)\n".utf8))
    },
    logger: logger)
try await app.runService()
