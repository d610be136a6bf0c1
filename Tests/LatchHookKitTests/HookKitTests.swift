import Foundation
import LatchHookKit
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The error a signature check throws, or nil when it passes.
private func failure(_ check: () throws -> Void) -> HookSignatureError? {
    do {
        try check()
        return nil
    } catch let error as HookSignatureError {
        return error
    } catch {
        Issue.record("not a HookSignatureError: \(error)")
        return nil
    }
}

private func isMalformed(_ error: HookSignatureError?) -> Bool {
    if case .malformed = error { return true }
    return false
}

private let vectorBody = Array(#"{"a":1}"#.utf8)
private let vectorTime = Date(timeIntervalSince1970: 1_700_000_000)
/// HMAC-SHA256(key "secret", "1700000000.{"a":1}") from Python's hmac module and `openssl dgst -sha256 -hmac secret`.
private let vectorMAC = "49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686"
/// The same message keyed with "rotated" (Python's hmac module).
private let rotatedMAC = "1c6490f3ec80d6316d1cdc3a7d77c688e79621a0b69084aa0f105ad039d31135"

@Suite("Hook signature")
struct HookSignatureTests {
    @Test("What header() makes, verify() accepts, returning the timestamp and the matched MAC")
    func roundTrip() throws {
        let body = Array(#"{"step":"complete","transactionId":"t1"}"#.utf8)
        let header = HookSignature.header(secret: "s3cret", timestamp: 1_700_000_123, body: body)
        #expect(header.hasPrefix("t=1700000123,v1="))
        let verified = try HookSignature.verify(header: header, body: body, secret: "s3cret", now: Date(timeIntervalSince1970: 1_700_000_123))
        #expect(verified.timestamp == 1_700_000_123)
        #expect(verified.signature == HookSignature.mac(secret: "s3cret", timestamp: 1_700_000_123, body: body))
        // The body as Data verifies the same.
        try HookSignature.verify(header: header, body: Data(body), secret: "s3cret", now: Date(timeIntervalSince1970: 1_700_000_100))
    }

    @Test("A fixed vector computed outside Swift (Python hmac, OpenSSL)")
    func publishedVector() throws {
        #expect(HookSignature.mac(secret: "secret", timestamp: 1_700_000_000, body: vectorBody) == vectorMAC)
        #expect(HookSignature.header(secret: "secret", timestamp: 1_700_000_000, body: vectorBody) == "t=1700000000,v1=\(vectorMAC)")
        let verified = try HookSignature.verify(header: "t=1700000000,v1=\(vectorMAC)", body: vectorBody, secret: "secret", now: vectorTime)
        #expect(verified.signature == vectorMAC)
        // Uppercase hex, spaces after commas and other schemes are accepted.
        try HookSignature.verify(header: "t=1700000000, v0=abc, v1=\(vectorMAC.uppercased())", body: vectorBody, secret: "secret", now: vectorTime)
    }

    @Test("A timestamp outside the replay window either way is stale; the edges are inside")
    func staleAndFuture() throws {
        let header = "t=1700000000,v1=\(vectorMAC)"
        try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime.addingTimeInterval(300))
        try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime.addingTimeInterval(-300))
        let old = failure { try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime.addingTimeInterval(301)) }
        #expect(old == .stale(timestamp: 1_700_000_000, now: 1_700_000_301))
        #expect(old?.description.contains("301 s old") == true)
        let future = failure { try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime.addingTimeInterval(-301)) }
        #expect(future == .stale(timestamp: 1_700_000_000, now: 1_699_999_699))
        #expect(future?.description.contains("future") == true)
        // A tighter window.
        let tight = failure {
            try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime.addingTimeInterval(31), tolerance: 30)
        }
        #expect(tight == .stale(timestamp: 1_700_000_000, now: 1_700_000_031))
        // A stale header with a wrong MAC is a mismatch: stale says the signature was authentic.
        let forged = failure {
            try HookSignature.verify(header: header, body: vectorBody, secret: "other", now: vectorTime.addingTimeInterval(10_000))
        }
        #expect(forged == .mismatch)
    }

    @Test("A tampered body, timestamp or secret does not match")
    func tampered() {
        let header = "t=1700000000,v1=\(vectorMAC)"
        #expect(failure { try HookSignature.verify(header: header, body: Array(#"{"a":2}"#.utf8), secret: "secret", now: vectorTime) } == .mismatch)
        #expect(failure { try HookSignature.verify(header: header, body: vectorBody + [0x20], secret: "secret", now: vectorTime) } == .mismatch)
        #expect(failure { try HookSignature.verify(header: header, body: [UInt8](), secret: "secret", now: vectorTime) } == .mismatch)
        #expect(failure { try HookSignature.verify(header: header, body: vectorBody, secret: "Secret", now: vectorTime) } == .mismatch)
        #expect(
            failure { try HookSignature.verify(header: "t=1700000001,v1=\(vectorMAC)", body: vectorBody, secret: "secret", now: vectorTime) }
                == .mismatch)
        var flipped = Array(vectorMAC)
        flipped[63] = flipped[63] == "6" ? "7" : "6"
        #expect(
            failure { try HookSignature.verify(header: "t=1700000000,v1=\(String(flipped))", body: vectorBody, secret: "secret", now: vectorTime) }
                == .mismatch)
    }

    @Test("Malformed headers are refused as malformed", arguments: [
        "", "garbage", "t=1700000000", "v1=\(vectorMAC)", "t=,v1=\(vectorMAC)", "t=abc,v1=\(vectorMAC)", "t=-1700000000,v1=\(vectorMAC)",
        "t=+1700000000,v1=\(vectorMAC)", "t=1700000000.5,v1=\(vectorMAC)", "t=1234567890123,v1=\(vectorMAC)",
        "t=1700000000,t=1700000000,v1=\(vectorMAC)", "t=1700000000,v1=", "t=1700000000,v1=\(vectorMAC.dropLast(2))",
        "t=1700000000,v1=\(vectorMAC)00", "t=1700000000,v1=\(vectorMAC.dropLast())g", "t=1700000000,,v1=\(vectorMAC)",
        "t=1700000000;v1=\(vectorMAC)", "=1700000000,v1=\(vectorMAC)", "t=1700000000,v1=\(vectorMAC)," + String(repeating: "x=y,", count: 600),
        "t=1700000000" + String(repeating: ",v1=\(vectorMAC)", count: 9), "t = 1700000000,v1=\(vectorMAC)",
    ])
    func malformed(header: String) {
        let error = failure { try HookSignature.verify(header: header, body: vectorBody, secret: "secret", now: vectorTime) }
        #expect(isMalformed(error), "\(header.prefix(80)): \(String(describing: error))")
    }

    @Test("No usable secret is a malformed check, not a pass")
    func emptySecret() {
        let header = HookSignature.header(secret: "", timestamp: 1_700_000_000, body: vectorBody)
        #expect(isMalformed(failure { try HookSignature.verify(header: header, body: vectorBody, secret: "", now: vectorTime) }))
        #expect(isMalformed(failure { try HookSignature.verify(header: header, body: vectorBody, secrets: [], now: vectorTime) }))
    }

    @Test("Rotation: several v1 values, several secrets")
    func rotation() throws {
        // Latch signing with the old and the new secret while the hook moves over.
        let both = "t=1700000000,v1=\(rotatedMAC),v1=\(vectorMAC)"
        #expect(HookSignature.header(secrets: ["rotated", "secret"], timestamp: 1_700_000_000, body: vectorBody) == both)
        #expect(try HookSignature.verify(header: both, body: vectorBody, secret: "secret", now: vectorTime).signature == vectorMAC)
        #expect(try HookSignature.verify(header: both, body: vectorBody, secret: "rotated", now: vectorTime).signature == rotatedMAC)
        #expect(failure { try HookSignature.verify(header: both, body: vectorBody, secret: "third", now: vectorTime) } == .mismatch)
        // The hook knowing the old and the new secret while Latch moves over.
        let single = "t=1700000000,v1=\(rotatedMAC)"
        #expect(try HookSignature.verify(header: single, body: vectorBody, secrets: ["secret", "rotated"], now: vectorTime).signature == rotatedMAC)
        #expect(failure { try HookSignature.verify(header: single, body: vectorBody, secrets: ["secret", "third"], now: vectorTime) } == .mismatch)
        // A wrong value beside a right one does not spoil it.
        let mixed = "t=1700000000,v1=\(String(repeating: "0", count: 64)),v1=\(vectorMAC)"
        #expect(try HookSignature.verify(header: mixed, body: vectorBody, secret: "secret", now: vectorTime).signature == vectorMAC)
    }
}

// The example in `HookSignature.verify`'s documentation and Examples/README-hooks.md, verbatim.
private let replays = HookReplayGuard()

/// The hook request, or nil when it must be refused with 401.
private func authenticate(body: Data, signature: String?, idempotencyKey: String?, secret: String) -> HookRequest? {
    guard let signature,
        let verified = try? HookSignature.verify(header: signature, body: body, secret: secret),
        replays.admit(verified, idempotencyKey: idempotencyKey) == .accepted
    else { return nil }
    return try? JSONDecoder().decode(HookRequest.self, from: body)
}

@Test("The documented 10-line check accepts a signed request once and refuses an unsigned, forged or replayed one")
func documentedExample() throws {
    let body = try JSONEncoder().encode(HookRequest(step: .complete, transactionId: "doc-tx", identityProvider: "p", clientId: "c"))
    let header = HookSignature.header(secret: "doc-secret", timestamp: Int64(Date().timeIntervalSince1970), body: body)
    #expect(authenticate(body: body, signature: nil, idempotencyKey: "doc-tx:complete:1", secret: "doc-secret") == nil)
    #expect(authenticate(body: body, signature: header, idempotencyKey: "doc-tx:complete:1", secret: "other") == nil)
    #expect(authenticate(body: body, signature: header, idempotencyKey: "doc-tx:complete:1", secret: "doc-secret")?.transactionId == "doc-tx")
    #expect(authenticate(body: body, signature: header, idempotencyKey: "doc-tx:complete:1", secret: "doc-secret") == nil)
    #expect(authenticate(body: body, signature: header, idempotencyKey: "doc-tx:complete:2", secret: "doc-secret") != nil)
}

@Test("The Python check in Examples/README-hooks.md, run as written, accepts Latch's signature once and refuses a replay, a forgery and a stale one")
func documentedPythonExample() async throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("Examples/README-hooks.md"), encoding: .utf8)
    // The code block that starts with the imports.
    let start = try #require(readme.range(of: "```python\nimport hashlib, hmac, time"))
    let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
    let snippet = String(readme[readme.index(start.lowerBound, offsetBy: "```python\n".count)..<end.lowerBound])
    let body = try JSONEncoder().encode(HookRequest(step: .`init`, transactionId: "py-tx", identityProvider: "p", clientId: "c"))
    let now = Int64(Date().timeIntervalSince1970)
    let header = HookSignature.header(secret: "py-secret", timestamp: now, body: body)
    let stale = HookSignature.header(secret: "py-secret", timestamp: now - 400, body: body)
    let script = snippet + """

        import sys
        body = sys.argv[1].encode()
        print(verify(sys.argv[2], body, "py-secret", "py-tx:init:1"),   # accepted
              verify(sys.argv[2], body, "py-secret", "py-tx:init:1"),   # replayed
              verify(sys.argv[2], body, "py-secret", "py-tx:init:2"),   # Latch's next attempt
              verify(sys.argv[2], body, "another-secret", "py-tx:init:3"),
              verify(sys.argv[2], body + b" ", "py-secret", "py-tx:init:4"),
              verify(sys.argv[3], body, "py-secret", "py-tx:init:5"),
              verify("t=abc,v1=00", body, "py-secret", "py-tx:init:6"))
        """
    let (status, output) = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", script, String(decoding: body, as: UTF8.self), header, stale])
    #expect(status == 0, "\(output)")
    #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "True False True False False False False", "\(output)")
}

@Suite("Hook replay guard")
struct HookReplayGuardTests {
    let verified = HookSignature.Verified(timestamp: 1_700_000_000, signature: vectorMAC)

    @Test("The same request twice inside the window is a replay; Latch's next attempt is not; after the window it is forgotten")
    func replay() throws {
        let replays = HookReplayGuard()
        let verified = try HookSignature.verify(header: "t=1700000000,v1=\(vectorMAC)", body: vectorBody, secret: "secret", now: vectorTime)
        #expect(replays.admit(verified, idempotencyKey: "tx:complete:1", now: vectorTime) == .accepted)
        #expect(replays.admit(verified, idempotencyKey: "tx:complete:1", now: vectorTime.addingTimeInterval(299)) == .replayed)
        // A retry signed in the same second carries the next attempt number.
        #expect(replays.admit(verified, idempotencyKey: "tx:complete:2", now: vectorTime.addingTimeInterval(1)) == .accepted)
        // Past the window the signature is stale anyway; the entry is gone.
        #expect(replays.admit(verified, idempotencyKey: "tx:complete:1", now: vectorTime.addingTimeInterval(301)) == .accepted)
    }

    @Test("A signature from the future is remembered until it goes stale; one admitted late for at least the window")
    func expiry() {
        let replays = HookReplayGuard(window: 300)
        #expect(replays.admit("future", signedAt: 1_700_000_200, now: vectorTime) == .accepted)
        #expect(replays.admit("future", signedAt: 1_700_000_200, now: vectorTime.addingTimeInterval(450)) == .replayed)
        #expect(replays.admit("future", signedAt: 1_700_000_200, now: vectorTime.addingTimeInterval(501)) == .accepted)
        #expect(replays.admit("late", signedAt: 1_699_999_000, now: vectorTime) == .accepted)
        #expect(replays.admit("late", signedAt: 1_699_999_000, now: vectorTime.addingTimeInterval(299)) == .replayed)
    }

    @Test("Bounded: full of live entries it fails closed; expired ones make room")
    func bounded() {
        let replays = HookReplayGuard(window: 300, capacity: 3)
        for index in 0..<3 {
            #expect(replays.admit(verified, idempotencyKey: "tx\(index):complete:1", now: vectorTime) == .accepted)
        }
        #expect(replays.admit(verified, idempotencyKey: "tx3:complete:1", now: vectorTime.addingTimeInterval(10)) == .full)
        #expect(replays.admit(verified, idempotencyKey: "tx0:complete:1", now: vectorTime.addingTimeInterval(10)) == .replayed)
        #expect(replays.count == 3)
        #expect(replays.admit(verified, idempotencyKey: "tx3:complete:1", now: vectorTime.addingTimeInterval(301)) == .accepted)
        #expect(replays.count == 1)
        // Many distinct keys over a long time: never more than the capacity.
        let busy = HookReplayGuard(window: 5, capacity: 50)
        for second in 0..<1_000 {
            let now = vectorTime.addingTimeInterval(Double(second))
            for index in 0..<3 {
                _ = busy.admit("k\(second)-\(index)", signedAt: 1_700_000_000 + Int64(second), now: now)
            }
            #expect(busy.count <= 50)
        }
    }

    @Test("Concurrent admissions of one key: exactly one is accepted")
    func concurrent() async {
        let replays = HookReplayGuard()
        let accepted = await withTaskGroup(of: HookReplayGuard.Admission.self) { group in
            for _ in 0..<50 {
                group.addTask { replays.admit("same", signedAt: 1_700_000_000, now: vectorTime) }
            }
            var count = 0
            for await admission in group where admission == .accepted { count += 1 }
            return count
        }
        #expect(accepted == 1)
    }
}

@Suite("Hook wire types")
struct HookWireTests {
    @Test("A request decodes with and without initData; a missing data is null; encoding omits a nil initData")
    func request() throws {
        let json = #"{"step":"complete","transactionId":"tx1","identityProvider":"sms","clientId":"app","data":{"code":"123456"},"initData":{"message":"code sent"}}"#
        let request = try JSONDecoder().decode(HookRequest.self, from: Data(json.utf8))
        #expect(request.step == .complete)
        #expect(request.data["code"]?.stringValue == "123456")
        #expect(request.initData?["message"]?.stringValue == "code sent")
        let bare = try JSONDecoder().decode(
            HookRequest.self, from: Data(#"{"step":"init","transactionId":"tx2","identityProvider":"sms","clientId":"app"}"#.utf8))
        #expect(bare.step == .`init` && bare.data == .null && bare.initData == nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let encoded = String(decoding: try encoder.encode(bare), as: UTF8.self)
        #expect(encoded == #"{"clientId":"app","data":null,"identityProvider":"sms","step":"init","transactionId":"tx2"}"#)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(HookRequest.self, from: Data(#"{"step":"other","transactionId":"t","identityProvider":"i","clientId":"c"}"#.utf8))
        }
    }

    @Test("A response round-trips with a user; the status ranges")
    func response() throws {
        let json = #"{"status":2000,"user":{"username":"+15550001234","attributes":{"phone":"+15550001234","tier":2},"amr":["sms"]}}"#
        let response = try JSONDecoder().decode(HookResponse.self, from: Data(json.utf8))
        #expect(response.outcome == .success)
        #expect(response.user == HookUser(username: "+15550001234", attributes: ["phone": "+15550001234", "tier": 2], amr: ["sms"]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(try JSONDecoder().decode(HookResponse.self, from: encoder.encode(response)) == response)
        let retry = HookResponse.retry(4001, message: "wrong code", ["remainingAttempts": 2])
        #expect(String(decoding: try encoder.encode(retry), as: UTF8.self) == #"{"data":{"message":"wrong code","remainingAttempts":2},"status":4001}"#)
        let outcomes: [(Int, HookResponse.Outcome)] = [
            (1999, .invalid), (2000, .success), (2999, .success), (3000, .invalid), (4000, .retry), (4999, .retry), (5000, .restart),
            (5999, .restart), (6000, .invalid), (-1, .invalid),
        ]
        for (status, outcome) in outcomes { #expect(HookResponse(status: status).outcome == outcome, "\(status)") }
    }

    @Test("Idempotency-Key: transactionId:step:attempt, read from the right")
    func idempotencyKey() {
        #expect(HookIdempotencyKey("tx1:complete:2") == HookIdempotencyKey(transactionId: "tx1", step: .complete, attempt: 2))
        #expect(HookIdempotencyKey("urn:tx:1:init:0") == HookIdempotencyKey(transactionId: "urn:tx:1", step: .`init`, attempt: 0))
        #expect(HookIdempotencyKey(transactionId: "a:b", step: .complete, attempt: 3).description == "a:b:complete:3")
        for bad in ["", "tx1", "tx1:complete", ":complete:1", "tx1:finish:1", "tx1:complete:x", "tx1:complete:-1", "tx1:complete:"] {
            #expect(HookIdempotencyKey(bad) == nil, "\(bad)")
        }
    }
}

// MARK: - The example hooks as real processes

/// An example hook as a child process, with the signing side of Latch.
private typealias HookProcess = ExampleHookProcess

extension ExampleHookProcess {
    /// A signed request as Latch makes it: the body, its Latch-Signature and Idempotency-Key.
    fileprivate func signed(_ request: HookRequest, attempt: Int = 1, secret: String? = nil, at time: Date = Date()) throws -> (body: Data, headers: [String: String]) {
        let body = try JSONEncoder().encode(request)
        let signature = HookSignature.header(secret: secret ?? self.secret, timestamp: Int64(time.timeIntervalSince1970), body: body)
        return (body, [
            "Latch-Signature": signature, "Content-Type": "application/json",
            "Idempotency-Key": HookIdempotencyKey(transactionId: request.transactionId, step: request.step, attempt: attempt).description,
        ])
    }

    /// POSTs bytes to the hook: the HTTP status and the JSON answer.
    fileprivate func post(_ body: Data, headers: [String: String]) async throws -> (Int, JSONValue) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/")!)
        request.httpMethod = "POST"
        request.timeoutInterval = 15
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONValue.parse(data)) ?? .null)
    }

    /// A signed step: the HTTP status and the hook's answer.
    fileprivate func send(_ request: HookRequest, attempt: Int = 1) async throws -> (Int, HookResponse?) {
        let (body, headers) = try signed(request, attempt: attempt)
        let (status, answer) = try await post(body, headers: headers)
        return (status, try? JSONDecoder().decode(HookResponse.self, from: Data(answer.serialized())))
    }

    /// Unsigned, wrongly signed, stale and replayed requests are each refused with 401 and a JSON error.
    fileprivate func expectRefusals(_ request: HookRequest) async throws {
        var (body, headers) = try signed(request, attempt: 7)
        headers["Latch-Signature"] = nil
        var (status, answer) = try await post(body, headers: headers)
        #expect(status == 401 && answer["error"]?.stringValue == "invalid_signature", "unsigned: \(status) \(answer)")

        (body, headers) = try signed(request, attempt: 7, secret: "not-the-secret")
        (status, answer) = try await post(body, headers: headers)
        #expect(status == 401 && answer["error"]?.stringValue == "invalid_signature", "wrong secret: \(status) \(answer)")

        (body, headers) = try signed(request, attempt: 7, at: Date().addingTimeInterval(-400))
        (status, answer) = try await post(body, headers: headers)
        #expect(status == 401 && answer["message"]?.stringValue?.contains("old") == true, "stale: \(status) \(answer)")

        (body, headers) = try signed(request, attempt: 7)
        (status, _) = try await post(body, headers: headers)
        #expect(status == 200, "first: \(status)")
        (status, answer) = try await post(body, headers: headers)
        #expect(status == 401 && answer["error"]?.stringValue == "replayed_request", "replayed: \(status) \(answer)")
        // The same bytes with a tampered body and the old signature.
        (status, answer) = try await post(body + Data(" ".utf8), headers: headers)
        #expect(status == 401 && answer["error"]?.stringValue == "invalid_signature", "tampered: \(status) \(answer)")
    }
}

@Suite("Example hooks as processes", .serialized)
struct ExampleHookProcessTests {
    @Test("InvitationHook: a code registers once, an unknown code is retryable, a used one restarts, init is refused, replays are 401")
    func invitation() async throws {
        let directory = TemporaryDirectory(prefix: "latch-hookkit")
        defer { directory.remove() }
        let hook = try await HookProcess(
            "InvitationHook", secret: "invitation-secret", environment: ["INVITATION_CODES": "ALPHA, BETA"], output: directory.path + "/out.log")
        func complete(_ transaction: String, _ data: JSONValue) -> HookRequest {
            HookRequest(step: .complete, transactionId: transaction, identityProvider: "invitation", clientId: "app", data: data)
        }

        var (status, answer) = try await hook.send(complete("tx-a", ["code": "ALPHA", "username": "alice"]))
        #expect(status == 200)
        #expect(answer == .success(user: HookUser(username: "alice", attributes: ["invitation": "ALPHA"], amr: ["inv"])))
        // Latch retrying the transaction that succeeded gets the same success.
        (status, answer) = try await hook.send(complete("tx-a", ["code": "ALPHA", "username": "alice"]), attempt: 2)
        #expect(status == 200 && answer?.status == 2000 && answer?.user?.username == "alice")
        // Another transaction with the used code: restart.
        (_, answer) = try await hook.send(complete("tx-b", ["code": "ALPHA", "username": "bob"]))
        #expect(answer == .restart(5001, message: "this invitation was used"))
        // An unknown code: retry, then the same transaction with a good code succeeds.
        (_, answer) = try await hook.send(complete("tx-c", ["code": "GAMMA", "username": "carol"]))
        #expect(answer == .retry(4001, message: "unknown invitation code"))
        (_, answer) = try await hook.send(complete("tx-c", ["code": "BETA", "username": "carol"]), attempt: 1)
        #expect(answer?.status == 2000 && answer?.user?.attributes?["invitation"] == "BETA")
        // init on a one-step provider.
        (_, answer) = try await hook.send(HookRequest(step: .`init`, transactionId: "tx-d", identityProvider: "invitation", clientId: "app"))
        #expect(answer == .restart(5002, message: "one-step provider"))

        try await hook.expectRefusals(complete("tx-e", ["code": "NOPE", "username": "eve"]))
        #expect(await hook.stop() != nil)
    }

    @Test("SMSHook: init sends a code, wrong codes are 4001, 4001, then 5001; the right code registers; unknown transaction 5003; replays are 401")
    func sms() async throws {
        let directory = TemporaryDirectory(prefix: "latch-hookkit")
        defer { directory.remove() }
        let outbox = directory.path + "/outbox.txt"
        let hook = try await HookProcess(
            "SMSHook", secret: "sms-secret", environment: ["SMS_OUTBOX": outbox, "SMS_FIXED_CODE": "123456"], output: directory.path + "/out.log")
        func step(_ step: HookRequest.Step, _ transaction: String, _ data: JSONValue) -> HookRequest {
            HookRequest(step: step, transactionId: transaction, identityProvider: "sms", clientId: "app", data: data)
        }

        // Three wrong codes.
        var (status, answer) = try await hook.send(step(.`init`, "tx-1", ["phone": "+15550001234"]))
        #expect(status == 200 && answer == .success(data: ["message": "code sent", "phoneHint": "…34"]))
        let sent = (try? String(contentsOfFile: outbox, encoding: .utf8)) ?? ""
        #expect(sent == "tx-1 +15550001234 123456\n")
        (_, answer) = try await hook.send(step(.complete, "tx-1", ["code": "000000"]))
        #expect(answer == .retry(4001, message: "wrong code", ["remainingAttempts": 2]))
        (_, answer) = try await hook.send(step(.complete, "tx-1", ["code": "000001"]))
        #expect(answer == .retry(4001, message: "wrong code", ["remainingAttempts": 1]))
        (_, answer) = try await hook.send(step(.complete, "tx-1", ["code": "000002"]))
        #expect(answer == .restart(5001, message: "too many attempts"))
        // Dead: even the right code no longer works.
        (_, answer) = try await hook.send(step(.complete, "tx-1", ["code": "123456"]))
        #expect(answer?.status == 5001)

        // A wrong code, then the right one.
        (_, answer) = try await hook.send(step(.`init`, "tx-2", ["phone": "+4930123456"]))
        #expect(answer?.status == 2000 && answer?.data?["phoneHint"] == "…56")
        (_, answer) = try await hook.send(step(.complete, "tx-2", ["code": "999999"]))
        #expect(answer?.status == 4001)
        (_, answer) = try await hook.send(step(.complete, "tx-2", ["code": "123456"]))
        let user = HookUser(username: "+4930123456", attributes: ["phone": "+4930123456"], amr: ["sms"])
        #expect(answer == .success(user: user))
        (_, answer) = try await hook.send(step(.complete, "tx-2", ["code": "123456"]), attempt: 2)
        #expect(answer == .success(user: user))
        #expect(((try? String(contentsOfFile: outbox, encoding: .utf8)) ?? "").hasSuffix("tx-2 +4930123456 123456\n"))

        // Unknown transaction; a bad phone number.
        (_, answer) = try await hook.send(step(.complete, "tx-never", ["code": "123456"]))
        #expect(answer?.status == 5003)
        (_, answer) = try await hook.send(step(.`init`, "tx-3", ["phone": "call me"]))
        #expect(answer?.outcome == .retry)

        try await hook.expectRefusals(step(.`init`, "tx-4", ["phone": "+15550009999"]))
        #expect(await hook.stop() != nil)
    }
}
