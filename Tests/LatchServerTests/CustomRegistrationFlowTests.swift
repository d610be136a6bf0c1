import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchApp
import LatchCore
import LatchHookKit
import LatchJOSE
import LatchModel
@testable import LatchSQLite
import LatchTesting
import NIOCore
import Testing

/// Custom registration end to end: Latch over HTTP (in-process router), the example hooks as real processes, and a
/// scripted live hook for the ways a hook can fail.
@Suite("Custom registration over HTTP", .serialized)
struct CustomRegistrationFlowTests {
    static let invitationSecret = "invitation-secret-0123456789"
    static let smsSecret = "sms-secret-0123456789abcdef"

    /// A deployment whose clock starts now (the hooks check signature timestamps) and that may call loopback hooks.
    static func deployment() async throws -> Deployment {
        try await Deployment.make(clock: .running()) { $0.hooksAllowPrivateAddresses = true }
    }

    static func withHooks(_ body: (ExampleHookProcess, ExampleHookProcess) async throws -> Void) async throws {
        let directory = TemporaryDirectory(prefix: "latch-custom")
        defer { directory.remove() }
        let invitation = try await ExampleHookProcess(
            "InvitationHook", secret: invitationSecret, environment: ["INVITATION_CODES": "ALPHA,BETA,GAMMA"], output: directory.path + "/invitation.log")
        let sms = try await ExampleHookProcess(
            "SMSHook", secret: smsSecret, environment: ["SMS_OUTBOX": directory.path + "/outbox.txt", "SMS_FIXED_CODE": "123456"],
            output: directory.path + "/sms.log")
        do {
            try await body(invitation, sms)
        } catch {
            _ = await invitation.stop()
            _ = await sms.stop()
            throw error
        }
        _ = await invitation.stop()
        _ = await sms.stop()
    }

    static func key(_ privateKey: PrivateKey, id: String = "device-1") -> RegistrationPublicKey {
        RegistrationPublicKey(keyId: id, algorithm: privateKey.algorithm.rawValue, publicKey: privateKey.publicKey.pemRepresentation)
    }

    static func addProviders(_ client: Client, invitation: ExampleHookProcess, sms: ExampleHookProcess) async throws {
        var reply = try await client.admin(
            .post, "/admin/v1/custom-providers",
            AdminCustomProviderRequest(
                id: "invitation", name: "Invitation code", flow: "one_step", hookURL: invitation.url, hookSecret: invitationSecret,
                allowedClaims: ["invitation"]))
        #expect(reply.status == .created, "\(reply.json)")
        reply = try await client.admin(
            .post, "/admin/v1/custom-providers",
            AdminCustomProviderRequest(id: "sms", name: "SMS code", flow: "two_step", hookURL: sms.url, hookSecret: smsSecret, retries: 0))
        #expect(reply.status == .created, "\(reply.json)")
    }

    @Test("One step (invitation hook): register with a device key, sign in with it, kept claims; retry after a lost answer; 4xxx retry on the transaction; 5xxx restart")
    func oneStep() async throws {
        try await Self.withHooks { invitation, sms in
            let deployment = try await Self.deployment()
            let recorder = AnswerRecorder()
            try await deployment.run(recording: recorder) { client in
                try await Self.addProviders(client, invitation: invitation, sms: sms)
                let listed = try await client.get("/v1/custom-registrations/providers").decode(CustomProviderList.self)
                #expect(listed.providers == [
                    CustomProviderInfo(id: "invitation", name: "Invitation code", flow: "one_step"), CustomProviderInfo(id: "sms", name: "SMS code", flow: "two_step"),
                ])
                let discovery = try await client.get("/.well-known/openid-configuration").json
                #expect(discovery["custom_registration_providers_endpoint"]?.stringValue == "https://latch.test/v1/custom-registrations/providers")

                let device = try PrivateKey.generate(.ES256)
                let request = CustomRegistrationCompleteRequest(
                    identityProvider: "invitation", data: ["code": "ALPHA", "username": "Alice"], publicKey: Self.key(device), registrationId: "reg-alice")
                var reply = try await client.postJSON("/v1/custom-registrations/complete", request)
                #expect(reply.status == .created, "\(reply.json)")
                let created = try reply.decode(CustomRegistrationCompleteResponse.self)
                #expect(created.username == "alice" && created.status == 2000)
                // The device key signs in; the ID token carries the kept attribute.
                let signedIn = try await client.signInWithKey(username: "alice", deviceKey: device)
                #expect(signedIn.status == .ok, "\(signedIn.json)")
                let idToken = try #require(signedIn.json["id_token"]?.stringValue)
                let claims = try ParsedJWS(idToken).claims
                #expect(claims["sub"]?.stringValue == created.userId && claims["invitation"]?.stringValue == "ALPHA")
                // The same request again (its answer was lost): the same user, nothing new.
                let users = try await deployment.count("users")
                reply = try await client.postJSON("/v1/custom-registrations/complete", request)
                #expect(reply.status == .created && (try? reply.decode(CustomRegistrationCompleteResponse.self))?.userId == created.userId)
                #expect(try await deployment.count("users") == users)
                // The same registrationId with another key is a conflict.
                var other = request
                other.publicKey = Self.key(try PrivateKey.generate(.ES256))
                #expect(try await client.postJSON("/v1/custom-registrations/complete", other).code == "registration_conflict")

                // A used invitation: 5001, restart; the transaction is failed.
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete",
                    CustomRegistrationCompleteRequest(identityProvider: "invitation", data: ["code": "ALPHA", "username": "bob"]))
                #expect(reply.status == .badRequest && reply.code == "custom_registration_restart")
                #expect(reply.json["status"]?.intValue == 5001 && reply.json["data"]?["message"]?.stringValue == "this invitation was used")
                #expect(reply.json["transactionId"] == nil)

                // An unknown code: 4001 with the transaction; the same transaction with a good code registers.
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete",
                    CustomRegistrationCompleteRequest(identityProvider: "invitation", data: ["code": "NOPE", "username": "carol"]))
                #expect(reply.status == .badRequest && reply.code == "custom_registration_retry" && reply.json["status"]?.intValue == 4001)
                let transaction = try #require(reply.json["transactionId"]?.stringValue)
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete",
                    CustomRegistrationCompleteRequest(transactionId: transaction, data: ["code": "BETA", "username": "carol"]))
                #expect(reply.status == .created && reply.json["username"]?.stringValue == "carol", "\(reply.json)")
                // Completed once.
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete",
                    CustomRegistrationCompleteRequest(transactionId: transaction, data: ["code": "GAMMA", "username": "dave"]))
                #expect(reply.status == .conflict && reply.code == "custom_transaction_finished" && reply.json["state"]?.stringValue == "completed")

                // The admin sees the outcomes.
                let listing = try await client.admin(.get, "/admin/v1/custom-providers/invitation/transactions").decode(AdminCustomTransactions.self)
                #expect(listing.counts == ["open": 0, "completed": 2, "cancelled": 0, "failed": 1])
                #expect(listing.transactions.first { $0.transactionId == transaction }?.attempts == 2)
                let open = try await client.admin(.get, "/admin/v1/custom-providers/invitation/transactions?state=open").decode(AdminCustomTransactions.self)
                #expect(open.transactions.isEmpty)
                let user = try await client.admin(.get, "/admin/v1/users/\(created.userId)").json
                #expect(user["kind"]?.stringValue == "CUSTOM")
            }
            try await recorder.checkAgainstOpenAPI()
        }
    }

    @Test("Two steps (SMS hook): init sends a code; a wrong code is 4001 with tries left, the right one registers; three wrong codes restart; cancel; expiry")
    func twoSteps() async throws {
        try await Self.withHooks { invitation, sms in
            let deployment = try await Self.deployment()
            let recorder = AnswerRecorder()
            try await deployment.run(recording: recorder) { client in
                try await Self.addProviders(client, invitation: invitation, sms: sms)
                func initiate(_ phone: String) async throws -> CustomRegistrationInitResponse {
                    let reply = try await client.postJSON(
                        "/v1/custom-registrations/init", CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": .string(phone)]))
                    #expect(reply.status == .ok, "\(reply.json)")
                    return try reply.decode(CustomRegistrationInitResponse.self)
                }
                func complete(_ transaction: String, _ code: String, key: RegistrationPublicKey? = nil) async throws -> Reply {
                    try await client.postJSON(
                        "/v1/custom-registrations/complete",
                        CustomRegistrationCompleteRequest(transactionId: transaction, data: ["code": .string(code)], publicKey: key))
                }

                let started = try await initiate("+4930123456")
                #expect(started.status == 2000 && started.data?["phoneHint"]?.stringValue == "…56")
                var reply = try await complete(started.transactionId, "000000")
                #expect(reply.code == "custom_registration_retry" && reply.json["data"]?["remainingAttempts"]?.intValue == 2)
                #expect(reply.json["transactionId"]?.stringValue == started.transactionId)
                let device = try PrivateKey.generate(.ES256)
                reply = try await complete(started.transactionId, "123456", key: Self.key(device))
                #expect(reply.status == .created && reply.json["username"]?.stringValue == "+4930123456", "\(reply.json)")
                #expect(try await client.signInWithKey(username: "+4930123456", deviceKey: device).status == .ok)

                // Three wrong codes: 4001, 4001, 5001 — then the transaction is dead.
                let second = try await initiate("+15550001234")
                #expect(try await complete(second.transactionId, "000001").json["status"]?.intValue == 4001)
                #expect(try await complete(second.transactionId, "000002").json["status"]?.intValue == 4001)
                reply = try await complete(second.transactionId, "000003")
                #expect(reply.code == "custom_registration_restart" && reply.json["status"]?.intValue == 5001)
                reply = try await complete(second.transactionId, "123456")
                #expect(reply.code == "custom_transaction_finished" && reply.json["state"]?.stringValue == "failed")

                // init again after a 4xxx on init (a bad phone number), on the same transaction.
                reply = try await client.postJSON(
                    "/v1/custom-registrations/init", CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "call me"]))
                #expect(reply.code == "custom_registration_retry" && reply.json["status"]?.intValue == 4002)
                let retried = try #require(reply.json["transactionId"]?.stringValue)
                #expect(try await complete(retried, "123456").code == "custom_step_out_of_order")
                reply = try await client.postJSON(
                    "/v1/custom-registrations/init",
                    CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "+4412345678"], transactionId: retried))
                #expect(reply.status == .ok && reply.json["transactionId"]?.stringValue == retried, "\(reply.json)")
                #expect(
                    try await client.postJSON(
                        "/v1/custom-registrations/init",
                        CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "+4412345678"], transactionId: retried)
                    ).code == "custom_step_out_of_order")

                // Cancel: the transaction is over (cancelling again changes nothing).
                #expect(try await client.postJSON("/v1/custom-registrations/cancel", CustomRegistrationCancelRequest(transactionId: retried)).status == .noContent)
                #expect(try await client.postJSON("/v1/custom-registrations/cancel", CustomRegistrationCancelRequest(transactionId: retried)).status == .noContent)
                reply = try await complete(retried, "123456")
                #expect(reply.code == "custom_transaction_finished" && reply.json["state"]?.stringValue == "cancelled")

                // Expiry (default lifetime 600 s).
                let late = try await initiate("+4915112345678")
                deployment.clock.advance(by: 600)
                let users = try await deployment.count("users")
                #expect(try await complete(late.transactionId, "123456").code == "custom_transaction_expired")
                #expect(try await client.postJSON("/v1/custom-registrations/cancel", CustomRegistrationCancelRequest(transactionId: late.transactionId)).code == "custom_transaction_expired")
                #expect(try await deployment.count("users") == users)

                let listing = try await client.admin(.get, "/admin/v1/custom-providers/sms/transactions").decode(AdminCustomTransactions.self)
                #expect(listing.counts == ["open": 1, "completed": 1, "cancelled": 1, "failed": 1])
            }
            try await recorder.checkAgainstOpenAPI()
        }
    }

    @Test("Bad requests: unknown and disabled providers, the wrong flow, unknown transactions, another client's transaction, oversized data — each its own code, nothing written")
    func badRequests() async throws {
        try await Self.withHooks { invitation, sms in
            let deployment = try await Self.deployment()
            let recorder = AnswerRecorder()
            try await deployment.run(recording: recorder) { client in
                try await Self.addProviders(client, invitation: invitation, sms: sms)
                #expect(try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "android", name: "Android")).status == .created)
                let started = try await client.postJSON(
                    "/v1/custom-registrations/init", CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "+4930123456"]))
                    .decode(CustomRegistrationInitResponse.self)
                let users = try await deployment.count("users")
                let transactions = try await deployment.count("custom_transactions")
                let cases: [(String, String, String, HTTPResponse.Status)] = [
                    ("init", #"{"identityProvider":"nobody"}"#, "custom_provider_unknown", .badRequest),
                    ("init", #"{"identityProvider":"../etc"}"#, "custom_provider_unknown", .badRequest),
                    ("init", #"{"identityProvider":"invitation"}"#, "custom_flow_mismatch", .badRequest),
                    ("complete", #"{"identityProvider":"sms","data":{"code":"1"}}"#, "custom_flow_mismatch", .badRequest),
                    ("complete", #"{"transactionId":"nope","data":{}}"#, "custom_transaction_unknown", .badRequest),
                    ("complete", #"{"data":{}}"#, "invalid_input", .badRequest),
                    ("complete", #"{"transactionId":"\#(started.transactionId)","identityProvider":"sms"}"#, "invalid_input", .badRequest),
                    ("complete", #"{"transactionId":"\#(started.transactionId)","clientId":"android","data":{"code":"123456"}}"#,
                     "custom_transaction_client_mismatch", .forbidden),
                    ("complete", #"{"transactionId":"\#(started.transactionId)","clientId":"unknown-app"}"#, "invalid_client", .unauthorized),
                    ("cancel", #"{"transactionId":"\#(started.transactionId)","clientId":"android"}"#, "custom_transaction_client_mismatch", .forbidden),
                    ("cancel", #"{"transactionId":"nope"}"#, "custom_transaction_unknown", .badRequest),
                    ("complete", #"{"transactionId":"\#(started.transactionId)","data":{"code":"123456"},"registrationId":"has space"}"#,
                     "invalid_input", .badRequest),
                    ("complete", #"{"transactionId":"\#(started.transactionId)","data":{"code":"123456"},"publicKey":{"keyId":"k","algorithm":"ES256","publicKey":"nope"}}"#,
                     "invalid_public_key", .badRequest),
                    ("init", #"{"identityProvider":"sms","data":{"blob":"\#(String(repeating: "x", count: 17 * 1024))"}}"#, "request_too_large", .contentTooLarge),
                    ("init", #"{"identityProvider":"sms","data":"#, "invalid_json", .badRequest),
                ]
                for (step, body, code, status) in cases {
                    let reply = try await client.send(.post, "/v1/custom-registrations/\(step)", headers: [.contentType: "application/json"], body: body)
                    #expect(reply.code == code && reply.status == status, "\(step) \(body.prefix(120)): \(reply.status) \(reply.json)")
                }
                // Disabled: no new transactions, and an open one cannot complete.
                #expect(try await client.admin(.patch, "/admin/v1/custom-providers/sms", AdminCustomProviderPatch(enabled: false)).status == .ok)
                var reply = try await client.postJSON(
                    "/v1/custom-registrations/init", CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "+4930123456"]))
                #expect(reply.code == "custom_provider_disabled" && reply.status == .forbidden)
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete", CustomRegistrationCompleteRequest(transactionId: started.transactionId, data: ["code": "123456"]))
                #expect(reply.code == "custom_provider_disabled")
                let listed = try await client.get("/v1/custom-registrations/providers").decode(CustomProviderList.self)
                #expect(listed.providers.map(\.id) == ["invitation"])
                #expect(try await deployment.count("users") == users)
                #expect(try await deployment.count("custom_transactions") == transactions)
                // Enabled again, the transaction still works.
                #expect(try await client.admin(.patch, "/admin/v1/custom-providers/sms", AdminCustomProviderPatch(enabled: true)).status == .ok)
                reply = try await client.postJSON(
                    "/v1/custom-registrations/complete", CustomRegistrationCompleteRequest(transactionId: started.transactionId, data: ["code": "123456"]))
                #expect(reply.status == .created, "\(reply.json)")
            }
            try await recorder.checkAgainstOpenAPI()
        }
    }

    @Test("Admin: create, list, get, patch, delete; the secret is write-only and sealed; bad providers refused; a loopback hook refused unless allowed")
    func admin() async throws {
        let deployment = try await Deployment.make()
        let recorder = AnswerRecorder()
        try await deployment.run(recording: recorder) { client in
            let request = AdminCustomProviderRequest(
                id: "crm", name: "Customer number", flow: "two_step", hookURL: "https://hooks.example.com/latch", hookSecret: "a-very-secret-hook-key",
                timeout: 3, allowedClaims: ["customerNumber"])
            var reply = try await client.admin(.post, "/admin/v1/custom-providers", request)
            #expect(reply.status == .created)
            let created = try reply.decode(AdminCustomProvider.self)
            #expect(created.retries == 2 && created.transactionLifetime == 600 && created.timeout == 3 && created.enabled)
            #expect(!String(decoding: reply.body, as: UTF8.self).contains("a-very-secret-hook-key"))
            let stored = try await deployment.store.read { db in try db.query("SELECT sealed_secret FROM custom_providers") }.first?.blob(0) ?? Data()
            #expect(!stored.isEmpty && stored.range(of: Data("a-very-secret-hook-key".utf8)) == nil)
            #expect(try await client.admin(.post, "/admin/v1/custom-providers", request).status == .conflict)
            #expect(try await client.admin(.get, "/admin/v1/custom-providers").decode(AdminCustomProviderList.self).customProviders == [created])
            #expect(try await client.admin(.get, "/admin/v1/custom-providers/crm").decode(AdminCustomProvider.self) == created)
            reply = try await client.admin(.patch, "/admin/v1/custom-providers/crm", AdminCustomProviderPatch(name: "CRM", retries: 0))
            #expect(reply.status == .ok && (try? reply.decode(AdminCustomProvider.self))?.retries == 0)
            #expect(try await client.admin(.patch, "/admin/v1/custom-providers/none", AdminCustomProviderPatch(name: "x")).status == .notFound)

            var bad: [(String, AdminCustomProviderRequest)] = []
            func variant(_ change: (inout AdminCustomProviderRequest) -> Void) -> AdminCustomProviderRequest {
                var copy = request
                copy.id = "other"
                change(&copy)
                return copy
            }
            bad.append(("id", variant { $0.id = "has space" }))
            bad.append(("flow", variant { $0.flow = "three_step" }))
            bad.append(("scheme", variant { $0.hookURL = "ftp://hooks.example.com/" }))
            bad.append(("loopback", variant { $0.hookURL = "http://127.0.0.1:8080/" }))
            bad.append(("metadata", variant { $0.hookURL = "http://169.254.169.254/latest" }))
            bad.append(("localhost", variant { $0.hookURL = "http://localhost/" }))
            bad.append(("credentials", variant { $0.hookURL = "https://user:pw@hooks.example.com/" }))
            bad.append(("short secret", variant { $0.hookSecret = "short" }))
            bad.append(("timeout", variant { $0.timeout = 0 }))
            bad.append(("retries", variant { $0.retries = 9 }))
            bad.append(("lifetime", variant { $0.transactionLifetime = 5 }))
            bad.append(("reserved claim", variant { $0.allowedClaims = ["sub"] }))
            bad.append(("name", variant { $0.name = "" }))
            for (label, body) in bad {
                let refused = try await client.admin(.post, "/admin/v1/custom-providers", body)
                #expect(refused.status == .badRequest && refused.code == "invalid_input", "\(label): \(refused.json)")
            }
            #expect(try await deployment.count("custom_providers") == 1)
            #expect(try await client.admin(.delete, "/admin/v1/custom-providers/crm").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/custom-providers/crm").status == .notFound)
            #expect(try await client.admin(.get, "/admin/v1/custom-providers/crm/transactions").status == .notFound)
            #expect(try await client.get("/admin/v1/custom-providers").status == .unauthorized)
        }
        try await recorder.checkAgainstOpenAPI()
    }

    @Test("Hook failures: down, slow, garbage, too large, a redirect, statuses 1999 and 6000, success without a user — each a 502/504 code, the transaction stays usable; 5xx is retried with new idempotency keys")
    func hookFailures() async throws {
        let hook = ScriptedHook()
        let app = Application(router: hook.router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { hookClient in
            let base = "http://127.0.0.1:\(try #require(hookClient.port))"
            let deployment = try await Self.deployment()
            let recorder = AnswerRecorder()
            try await deployment.run(recording: recorder) { client in
                func provider(_ id: String, _ path: String, flow: String = "one_step", timeout: Int = 5, retries: Int = 0) async throws {
                    let reply = try await client.admin(
                        .post, "/admin/v1/custom-providers",
                        AdminCustomProviderRequest(
                            id: id, name: id, flow: flow, hookURL: base + path, hookSecret: ScriptedHook.secret, timeout: timeout, retries: retries))
                    #expect(reply.status == .created, "\(reply.json)")
                }
                func complete(_ id: String) async throws -> Reply {
                    try await client.postJSON("/v1/custom-registrations/complete", CustomRegistrationCompleteRequest(identityProvider: id, data: ["x": 1]))
                }
                try await provider("down", "/down")
                let dead = try await client.admin(
                    .post, "/admin/v1/custom-providers",
                    AdminCustomProviderRequest(id: "dead", name: "dead", flow: "one_step", hookURL: "http://127.0.0.1:9/", hookSecret: ScriptedHook.secret, timeout: 30, retries: 1))
                #expect(dead.status == .created)
                try await provider("slow", "/slow", timeout: 1)
                try await provider("garbage", "/garbage")
                try await provider("big", "/big")
                try await provider("redirect", "/redirect")
                try await provider("low", "/status/1999")
                try await provider("high", "/status/6000")
                try await provider("nouser", "/status/2000")
                try await provider("badname", "/badname")
                try await provider("teapot", "/teapot")
                let expected: [(String, String, HTTPResponse.Status)] = [
                    ("down", "hook_unavailable", .badGateway), ("dead", "hook_unavailable", .badGateway), ("slow", "hook_timeout", .gatewayTimeout),
                    ("garbage", "hook_invalid_answer", .badGateway), ("big", "hook_invalid_answer", .badGateway),
                    ("redirect", "hook_invalid_answer", .badGateway), ("low", "hook_invalid_answer", .badGateway),
                    ("high", "hook_invalid_answer", .badGateway), ("nouser", "hook_invalid_answer", .badGateway),
                    ("badname", "hook_invalid_answer", .badGateway), ("teapot", "hook_invalid_answer", .badGateway),
                ]
                for (id, code, status) in expected {
                    let started = Date()
                    let reply = try await complete(id)
                    if id == "dead" {
                        // A refused connection fails at once (two attempts), not after the timeout (30 s; the margin is
                        // for a loaded 2-core machine).
                        #expect(Date().timeIntervalSince(started) < 25)
                    }
                    #expect(reply.code == code && reply.status == status, "\(id): \(reply.status) \(reply.json)")
                    #expect(!String(decoding: reply.body, as: UTF8.self).contains("127.0.0.1"), "\(id) leaks the hook's address")
                }
                #expect(try await deployment.count("users") == 0)
                #expect(try await deployment.count("custom_transactions") == 0)

                // Retried after 5xx: three attempts, each signed, each with its own idempotency key.
                try await provider("flaky", "/flaky", retries: 2)
                hook.failures = 2
                let reply = try await complete("flaky")
                #expect(reply.status == .created, "\(reply.json)")
                let seen = hook.requests(path: "/flaky")
                #expect(seen.count == 3)
                let keys = seen.compactMap { HookIdempotencyKey($0.idempotencyKey) }
                #expect(keys.map(\.attempt) == [1, 2, 3] && Set(keys.map(\.transactionId)).count == 1 && keys.allSatisfy { $0.step == .complete })
                for request in seen {
                    #expect((try? HookSignature.verify(header: request.signature, body: request.body, secret: ScriptedHook.secret)) != nil)
                    let decoded = try JSONDecoder().decode(HookRequest.self, from: request.body)
                    #expect(decoded.identityProvider == "flaky" && decoded.clientId == "default" && decoded.data == ["x": 1])
                }
                // Two-step: a hook failure on complete leaves the transaction open for another try.
                try await provider("twostep", "/twostep", flow: "two_step")
                let started = try await client.postJSON("/v1/custom-registrations/init", CustomRegistrationInitRequest(identityProvider: "twostep"))
                    .decode(CustomRegistrationInitResponse.self)
                hook.twoStepFails = true
                var second = try await client.postJSON(
                    "/v1/custom-registrations/complete", CustomRegistrationCompleteRequest(transactionId: started.transactionId))
                #expect(second.code == "hook_invalid_answer")
                hook.twoStepFails = false
                second = try await client.postJSON(
                    "/v1/custom-registrations/complete", CustomRegistrationCompleteRequest(transactionId: started.transactionId))
                #expect(second.status == .created, "\(second.json)")
                let twoStep = hook.requests(path: "/twostep").compactMap { try? JSONDecoder().decode(HookRequest.self, from: $0.body) }
                #expect(twoStep.map(\.step) == [.`init`, .complete, .complete])
                #expect(twoStep.last?.initData == ["ready": true])
                let keys2 = hook.requests(path: "/twostep").compactMap { HookIdempotencyKey($0.idempotencyKey)?.attempt }
                #expect(keys2 == [1, 2, 3])
            }
            try await recorder.checkAgainstOpenAPI()
        }
    }
}

/// A live hook whose answers are scripted by path, recording what Latch sends.
final class ScriptedHook: Sendable {
    static let secret = "scripted-hook-secret-0123"
    struct Seen: Sendable {
        let path: String
        let body: Data
        let signature: String
        let idempotencyKey: String
    }

    private let state = Locked<(seen: [Seen], failures: Int, twoStepFails: Bool)>(([], 0, false))

    var failures: Int {
        get { state.withLock { $0.failures } }
        set { state.withLock { $0.failures = newValue } }
    }
    var twoStepFails: Bool {
        get { state.withLock { $0.twoStepFails } }
        set { state.withLock { $0.twoStepFails = newValue } }
    }

    func requests(path: String) -> [Seen] { state.withLock { $0.seen.filter { $0.path == path } } }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.middlewares.add(RecordingMiddleware(hook: self))
        router.post("down") { _, _ -> Response in Response(status: .serviceUnavailable) }
        router.post("slow") { _, _ -> Response in
            try await Task.sleep(for: .seconds(3))
            return Self.json(#"{"status":2000,"user":{"username":"slow"}}"#)
        }
        router.post("garbage") { _, _ -> Response in Self.json("<html>not json</html>") }
        router.post("big") { _, _ -> Response in
            Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: 0x20, count: 3 * 1024 * 1024)))
        }
        router.post("redirect") { _, _ -> Response in Response(status: .found, headers: [.location: "http://169.254.169.254/"]) }
        router.post("status/:status") { _, context -> Response in
            Self.json(#"{"status":\#(try context.parameters.require("status"))}"#)
        }
        router.post("badname") { _, _ -> Response in Self.json(#"{"status":2000,"user":{"username":"has space"}}"#) }
        router.post("teapot") { _, _ -> Response in Self.json(#"{"status":2000}"#, status: .init(code: 418)) }
        router.post("flaky") { _, _ -> Response in
            let fail = self.state.withLock { state in
                defer { state.failures -= 1 }
                return state.failures > 0
            }
            return fail ? Response(status: .internalServerError) : Self.json(#"{"status":2001,"user":{"username":"flaky-user"}}"#)
        }
        router.post("twostep") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let decoded = try JSONDecoder().decode(HookRequest.self, from: Data(body.readableBytesView))
            if decoded.step == .`init` { return Self.json(#"{"status":2000,"data":{"ready":true}}"#) }
            return self.twoStepFails ? Self.json("{}") : Self.json(#"{"status":2000,"user":{"username":"two-step-user"}}"#)
        }
        return router
    }

    struct RecordingMiddleware: RouterMiddleware {
        typealias Context = BasicRequestContext
        let hook: ScriptedHook

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            hook.state.withLock {
                $0.seen.append(
                    Seen(
                        path: request.uri.path, body: Data(body.readableBytesView),
                        signature: request.headers[HTTPField.Name("Latch-Signature")!] ?? "",
                        idempotencyKey: request.headers[HTTPField.Name("Idempotency-Key")!] ?? ""))
            }
            return try await next(request, context)
        }
    }
}
