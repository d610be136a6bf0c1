import Crypto
import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Decodes a `data:image/png;base64,…` QR code with zbarimg (Debian's zbar-tools), as a phone's camera would — QR
/// codes only: with every symbology on, zbar now and then also reports a false EAN-8 among a QR code's modules.
func zbarDecode(dataURI: String) async throws -> String {
    let prefix = "data:image/png;base64,"
    guard dataURI.hasPrefix(prefix), let png = Data(base64Encoded: String(dataURI.dropFirst(prefix.count))) else {
        throw QRDecodeError("not a PNG data URI")
    }
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let file = directory.path + "/qr.png"
    try png.write(to: URL(fileURLWithPath: file))
    guard let zbar = ["/usr/bin/zbarimg", "/usr/local/bin/zbarimg"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
        throw QRDecodeError("zbarimg not found: apt-get install -y zbar-tools")
    }
    let (status, data) = try await ChildProcess.runCapturingStandardOutput(
        zbar, ["--raw", "-q", "-Sdisable", "-Sqrcode.enable", file], timeout: 60)
    guard status == 0 else { throw QRDecodeError("zbarimg found no QR code (exit \(status))") }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
}

struct QRDecodeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

@Suite("Out-of-band enrollment and approval over HTTP")
struct OutOfBandFlowTests {
    static func post(_ client: Client, _ path: String, _ json: JSONValue, bearer: String? = nil) async throws -> Reply {
        try await PinAuthenticatorTests.Setup.post(client, path, json, bearer: bearer)
    }

    /// The enrollment's link, read from its QR code by zbarimg, must be the `appLinkUri`; returns the decoded payload.
    static func scan(_ enrollment: JSONValue) async throws -> OutOfBandPayload {
        let dataURI = try #require(enrollment["enrollment"]?["qrCode"]?["dataUri"]?.stringValue)
        let link = try await zbarDecode(dataURI: dataURI)
        #expect(link == enrollment["enrollment"]?["appLinkUri"]?.stringValue)
        #expect(link.hasPrefix("https://latch.test/open?payload="))
        return try OutOfBandPayload(decoding: link)
    }

    /// Redeems `payload` at its redeem URL.
    static func redeem(_ client: Client, _ payload: OutOfBandPayload) async throws -> Reply {
        let path = try #require(URLComponents(string: payload.data.redeem_url)?.path)
        return try await post(client, path, .object(["token": .string(payload.data.token)]))
    }

    static func status(_ client: Client, _ enrollment: JSONValue) async throws -> JSONValue {
        try await post(client, "/v1/oob/status", .object(["statusToken": enrollment["enrollment"]?["statusToken"] ?? .null])).json
    }

    @Test("A backend enrols a new user; the phone scans the QR code (zbarimg), redeems, registers; status follows; the user signs in")
    func enrollment() async throws {
        try await Deployment.make().run { client in
            let answer = try await client.admin(
                .post, "/admin/v1/users/customer-42/enrollments", OutOfBandEnrollmentRequest(createUser: true, username: "Customer42"))
            #expect(answer.status == .created, "\(String(decoding: answer.body, as: UTF8.self))")
            let enrollment = answer.json
            #expect(enrollment["userId"] == "customer-42" && enrollment["username"] == "customer42" && enrollment["status"] == "pending")
            #expect(enrollment["enrollment"]?["qrCode"]?["type"] == "image/png")
            #expect(try await Self.status(client, enrollment)["status"] == "pending")
            let payload = try await Self.scan(enrollment)
            #expect(payload.data.redeem_url == "https://latch.test/v1/oob/redeem/registration")

            // The phone redeems and runs the registration ceremony.
            let redeemed = try await Self.redeem(client, payload)
            #expect(redeemed.status == .ok, "\(String(decoding: redeemed.body, as: UTF8.self))")
            #expect(redeemed.json["operation"] == "registration" && redeemed.json["userId"] == "customer-42")
            var polled = try await Self.status(client, enrollment)
            #expect(polled["status"] == "pending" && polled["redeemed"] == .bool(true))
            let phone = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
            let challenge = try #require(redeemed.json["publicKey"]?["challenge"]?.stringValue)
            let registered = try await Self.post(
                client, "/v1/oob/registration",
                .object(["ceremonyId": redeemed.json["ceremonyId"] ?? .null, "credential": phone.register(challenge: challenge), "name": "phone"]))
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            polled = try await Self.status(client, enrollment)
            #expect(polled["status"] == "succeeded" && polled["authenticatorId"] == registered.json["id"])
            // Redeeming again is refused as redeemed.
            #expect(try await Self.redeem(client, payload).code == "oob_token_redeemed")

            // The new authenticator signs the user in (discoverable).
            let options = try await Self.post(client, "/v1/fido/authentication/options", .object([:]))
            let credential = try phone.assert(
                challenge: try #require(options.json["publicKey"]?["challenge"]?.stringValue), userHandle: Base64URL.encode(Data("customer-42".utf8)),
                counter: 0)
            let signedIn = try await client.postForm(
                "/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", options.json["ceremonyId"]?.stringValue ?? ""), ("credential", credential)])
            #expect(signedIn.status == .ok, "\(String(decoding: signedIn.body, as: UTF8.self))")
        }
    }

    @Test("Bad tokens each get their own code and write nothing: unknown, wrong operation, expired; unknown status tokens answer unknown")
    func badTokens() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let enrollment = try await client.admin(.post, "/admin/v1/users/c1/enrollments", OutOfBandEnrollmentRequest(createUser: true)).json
            // The admin's enrollment is audited: the user it created and the enrollment it requested, in one unit.
            let records = try await client.admin(.get, "/admin/v1/audit").decode(AuditPage.self).records
            #expect(records.map(\.type) == ["oob.requested", "user.registered"] && records.allSatisfy { $0.actor == "admin:adm_root/env" })
            let payload = try await Self.scan(enrollment)
            let before = try await deployment.count("oob_transactions")
            #expect(try await Self.post(client, "/v1/oob/redeem/registration", .object(["token": "lot_unknown"])).code == "oob_token_unknown")
            #expect(try await Self.post(client, "/v1/oob/redeem/authentication", .object(["token": .string(payload.data.token)])).code == "oob_wrong_operation")
            #expect(try await Self.post(client, "/v1/oob/redeem/teleport", .object(["token": .string(payload.data.token)])).status == .notFound)
            #expect(try await Self.status(client, enrollment)["redeemed"] == .bool(false), "a refused redeem changes nothing")
            #expect(try await Self.post(client, "/v1/oob/status", .object(["statusToken": "los_nothing"])).json["status"] == "unknown")
            // Past the lifetime (600 s).
            client.deployment.clock.advance(by: 601)
            #expect(try await Self.redeem(client, payload).code == "oob_token_expired")
            #expect(try await Self.status(client, enrollment)["status"] == "expired")
            #expect(try await deployment.count("oob_transactions") == before)
            // Payloads: tampered, truncated, too long.
            #expect(throws: OutOfBandPayload.PayloadError.self) { try OutOfBandPayload(decoding: "https://latch.test/open?payload=eyJub3QiOiJpdCJ9") }
            #expect(throws: OutOfBandPayload.PayloadError.self) { try OutOfBandPayload(decoding: "https://latch.test/open?payl") }
            #expect(throws: OutOfBandPayload.PayloadError.tooLong) { try OutOfBandPayload(decoding: String(repeating: "A", count: 3_000)) }
            // Admin input: an unknown user without createUser; a message on a registration; an approval for a user without authenticators.
            #expect(try await client.admin(.post, "/admin/v1/users/nobody/enrollments", OutOfBandEnrollmentRequest()).code == "not_found")
            #expect(try await client.admin(.post, "/admin/v1/users/c1/enrollments", OutOfBandEnrollmentRequest(message: "hi")).code == "invalid_input")
            #expect(try await client.admin(.post, "/admin/v1/users/c1/enrollments", OutOfBandEnrollmentRequest(operation: "authentication")).code == "conflict")
            #expect(try await client.admin(.post, "/admin/v1/users/c1/enrollments", OutOfBandEnrollmentRequest(createUser: true)).code == "already_registered")
        }
    }

    /// A user `name` with a PIN authenticator enrolled out-of-band; returns the authenticator.
    static func enrolled(_ client: Client, _ name: String) async throws -> TestWebAuthnAuthenticator {
        let enrollment = try await client.admin(.post, "/admin/v1/users/\(name)/enrollments", OutOfBandEnrollmentRequest(createUser: true)).json
        let redeemed = try await redeem(client, try await scan(enrollment))
        let phone = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
        phone.bindingKey = P256.Signing.PrivateKey()
        let challenge = try #require(redeemed.json["publicKey"]?["challenge"]?.stringValue)
        let registered = try await post(
            client, "/v1/oob/registration", .object(["ceremonyId": redeemed.json["ceremonyId"] ?? .null, "credential": phone.register(challenge: challenge)]))
        #expect(registered.status == .created)
        return phone
    }

    @Test("Approval: the phone shows the backend's text and approves; another is denied; a wrong PIN fails it (counted); deregistration out-of-band")
    func approval() async throws {
        try await Deployment.make().run { client in
            let phone = try await Self.enrolled(client, "payer")
            func ask(_ message: String) async throws -> (JSONValue, Reply) {
                let enrollment = try await client.admin(
                    .post, "/admin/v1/users/payer/enrollments", OutOfBandEnrollmentRequest(operation: "authentication", message: message)).json
                return (enrollment, try await Self.redeem(client, try await Self.scan(enrollment)))
            }
            // Approve.
            let (first, redeemed) = try await ask("Pay 120 € to ACME?")
            #expect(redeemed.json["message"] == "Pay 120 € to ACME?" && redeemed.json["operation"] == "authentication")
            let allowed = redeemed.json["publicKey"]?["allowCredentials"]?.arrayValue ?? []
            #expect(allowed.count == 1 && allowed.first?["id"]?.stringValue == phone.credentialIDString)
            let assertion = try phone.assertion(challenge: try #require(redeemed.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil, counter: 0)
            let approved = try await Self.post(client, "/v1/oob/authentication", .object(["ceremonyId": redeemed.json["ceremonyId"] ?? .null, "credential": assertion]))
            #expect(approved.json["status"] == "approved", "\(String(decoding: approved.body, as: UTF8.self))")
            #expect(try await Self.status(client, first)["status"] == "approved")
            #expect(try await Self.post(client, "/v1/oob/authentication", .object(["ceremonyId": redeemed.json["ceremonyId"] ?? .null, "credential": assertion])).code
                == "invalid_input", "completed once")
            // Deny.
            let (second, declined) = try await ask("Pay 9,999 € to Mallory?")
            #expect(try await Self.post(client, "/v1/oob/deny", .object(["ceremonyId": declined.json["ceremonyId"] ?? .null])).json["status"] == "denied")
            #expect(try await Self.status(client, second)["status"] == "denied")
            // A stranger's key with a forged binding: refused for the binding before anything is counted.
            let (_, forged) = try await ask("Pay 7 € to Dave?")
            phone.signWith = P256.Signing.PrivateKey()
            phone.bindWith = P256.Signing.PrivateKey()
            let stranger = try phone.assertion(challenge: try #require(forged.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil, counter: 0)
            phone.bindWith = nil
            let unbound = try await Self.post(client, "/v1/oob/authentication", .object(["ceremonyId": forged.json["ceremonyId"] ?? .null, "credential": stranger]))
            #expect(unbound.code == "pin_binding_invalid" && unbound.json["pinStatus"] == nil, "\(String(decoding: unbound.body, as: UTF8.self))")
            // A wrong PIN from the phone (its binding verifies): counted, the approval fails.
            let (third, wrong) = try await ask("Pay 5 € to Carol?")
            let bad = try phone.assertion(challenge: try #require(wrong.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil, counter: 0)
            let refused = try await Self.post(client, "/v1/oob/authentication", .object(["ceremonyId": wrong.json["ceremonyId"] ?? .null, "credential": bad]))
            #expect(refused.code == "pin_attempt_failed" && refused.json["pinStatus"]?["remainingTries"] == 4)
            #expect(try await Self.status(client, third)["status"] == "failed")
            phone.signWith = nil
            // Deregistration out-of-band: the phone proves possession; the authenticator is gone.
            let removal = try await client.admin(.post, "/admin/v1/users/payer/enrollments", OutOfBandEnrollmentRequest(operation: "deregistration")).json
            let redeemedRemoval = try await Self.redeem(client, try await Self.scan(removal))
            let proof = try phone.assertion(challenge: try #require(redeemedRemoval.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil, counter: 0)
            let removed = try await Self.post(client, "/v1/oob/deregistration", .object(["ceremonyId": redeemedRemoval.json["ceremonyId"] ?? .null, "credential": proof]))
            #expect(removed.json["status"] == "succeeded", "\(String(decoding: removed.body, as: UTF8.self))")
            #expect(try await client.deployment.count("authenticators") == 0)
        }
    }

    @Test("Device linking: a signed-in user (recent sign-in) enrols a second device, whose authenticator joins the same user")
    func deviceLinking() async throws {
        try await Deployment.make().run { client in
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "linker", deviceKey: deviceKey)
            let bearer = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self).accessToken
            #expect(try await Self.post(client, "/v1/me/enrollments", .object(["createUser": true]), bearer: bearer).code == "invalid_input")
            let linked = try await Self.post(client, "/v1/me/enrollments", .object([:]), bearer: bearer)
            #expect(linked.status == .created && linked.json["userId"] == .string(user.userId))
            let redeemed = try await Self.redeem(client, try await Self.scan(linked.json))
            let tablet = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
            let registered = try await Self.post(
                client, "/v1/oob/registration",
                .object([
                    "ceremonyId": redeemed.json["ceremonyId"] ?? .null,
                    "credential": tablet.register(challenge: try #require(redeemed.json["publicKey"]?["challenge"]?.stringValue)),
                ]))
            #expect(registered.status == .created)
            #expect(try await client.get("/v1/me/authenticators", bearer: bearer).decode(FidoAuthenticatorList.self).authenticators.count == 1)
            // Not a recent sign-in any more: refused (RFC 9470).
            client.deployment.clock.advance(by: 400)
            #expect(try await Self.post(client, "/v1/me/enrollments", .object([:]), bearer: bearer).code == "insufficient_user_authentication")
        }
    }
}
