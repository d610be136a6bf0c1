import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// A local stand-in of Apple's DeviceCheck API (developer.apple.com, "Accessing and modifying per-device data"):
/// it checks the bearer JWT as Apple does (ES256 by the team's key, `kid`, `iss` = team id, a recent `iat`), keeps two
/// bits per device, and answers Apple's statuses. Device tokens are base64 of `device:<id>:<n>`; `forged` tokens
/// answer 400; devices named `rate-limited` 429 and `broken` 500; `unmarkable` devices' bits cannot be set (500).
final class AppleDeviceCheckStandIn: Sendable {
    let teamID = "TEAM123456"
    let keyID = "KEY1234567"
    let teamKey = P256.Signing.PrivateKey()
    let bits = Locked<[String: (Bool, Bool)]>([:])
    /// Every call, as `host operation`.
    let calls = Locked<[String]>([])
    /// Apple's clock, for the token's `iat`: the deployment's test clock.
    let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = { TestClock().now }) { self.now = now }

    var router: Router<BasicRequestContext> {
        let router = Router()
        for host in ["production", "development"] {
            for operation in ["validate_device_token", "query_two_bits", "update_two_bits"] {
                router.post("\(host)/v1/\(operation)") { request, _ in try await self.answer(host: host, operation: operation, request) }
            }
        }
        return router
    }

    func answer(host: String, operation: String, _ request: Request) async throws -> Response {
        calls.withLock { $0.append("\(host) \(operation)") }
        func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
            Response(status: status, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        // The authentication token.
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "),
            let jws = try? ParsedJWS(authorization.dropFirst(7)), jws.keyID == keyID,
            let verified = try? jws.verify(with: PublicKey(p256: teamKey.publicKey)), verified.claims["iss"]?.stringValue == teamID,
            case .int(let iat)? = verified.claims["iat"], abs(Int64(now().timeIntervalSince1970) - iat) < 3600
        else { return text(.unauthorized, "Unable to verify authorization token") }
        // The payload.
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard case .object(let payload)? = try? JSONValue.parse(Data(body.readableBytesView)), let token = payload["device_token"]?.stringValue,
            payload["transaction_id"]?.stringValue != nil, case .int = payload["timestamp"],
            let decoded = Data(base64Encoded: token).map({ String(decoding: $0, as: UTF8.self) }), decoded.hasPrefix("device:")
        else { return text(.badRequest, "Missing or incorrectly formatted device token payload") }
        let device = String(decoded.split(separator: ":")[1])
        switch device {
        case "rate-limited": return text(.tooManyRequests, "Too many requests")
        case "broken": return text(.internalServerError, "Internal Server Error")
        default: break
        }
        switch operation {
        case "query_two_bits":
            guard let (bit0, bit1) = bits.withLock({ $0[device] }) else { return text(.ok, "Failed to find bit state") }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"bit0":\#(bit0),"bit1":\#(bit1),"last_update_time":"2026-11"}"#)))
        case "update_two_bits":
            if device == "unmarkable" { return text(.internalServerError, "Internal Server Error") }
            guard case .bool(let bit0)? = payload["bit0"], case .bool(let bit1)? = payload["bit1"] else {
                return text(.badRequest, "Missing or incorrectly formatted bits")
            }
            bits.withLock { $0[device] = (bit0, bit1) }
            return text(.ok, "")
        default:
            return text(.ok, "")
        }
    }

    static func token(_ device: String, _ n: Int = 1) -> String { Data("device:\(device):\(n)".utf8).base64EncodedString() }
}

@Suite("DeviceCheck against a stand-in of Apple's API")
struct DeviceCheckTests {
    /// A deployment whose DeviceCheck hosts are a live stand-in of Apple's API, its default client holding DeviceCheck
    /// credentials signed by `teamKey` (default: the team's real key).
    static func withStandIn(
        teamKey: P256.Signing.PrivateKey? = nil, _ body: @escaping @Sendable (Client, AppleDeviceCheckStandIn) async throws -> Void
    ) async throws {
        let apple = AppleDeviceCheckStandIn()
        let standIn = Application(router: apple.router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await standIn.test(.live) { appleClient in
            let base = "http://127.0.0.1:\(try #require(appleClient.port))"
            try await Deployment.make {
                $0.deviceCheckURL = base + "/production"
                $0.deviceCheckDevelopmentURL = base + "/development"
            }.run { client in
                let key = (teamKey ?? apple.teamKey).pemRepresentation
                let patch = AdminClientPatch(
                    ios: AdminIOSEvidence(
                        appIds: ["TEAM123456.com.example.app"],
                        deviceCheck: AdminDeviceCheck(teamId: apple.teamID, keyId: apple.keyID, privateKey: key)))
                #expect(try await client.admin(.patch, "/admin/v1/clients/default", patch).status == .ok)
                try await body(client, apple)
            }
        }
    }

    @Test("Registration checks the token with Apple, allows one per device, and answers 503 when Apple cannot answer")
    func deviceCheck() async throws {
        try await Self.withStandIn { client, apple in
        let discovery = try await client.get("/.well-known/openid-configuration")
        #expect(discovery.json["registration_proof_types_supported"]?.arrayValue?.contains(.string("DEVICE_CHECK")) == true)

        func register(_ token: String, buildType: String = "release") async throws -> Reply {
            let key = try PrivateKey.generate(.ES256)
            return try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(
                    challengeType: .deviceCheck, answer: token, registrationId: UUID().uuidString,
                    publicKey: RegistrationPublicKey(keyId: "dc-1", algorithm: "ES256", publicKey: key.publicKey.pemRepresentation),
                    buildType: buildType, vendorId: Data(count: 16).base64EncodedString()))
        }
        let first = try await register(AppleDeviceCheckStandIn.token("phone-a"))
        #expect(first.status == .created, "\(String(decoding: first.body, as: UTF8.self))")
        #expect(apple.calls.withLock { $0 } == ["production validate_device_token", "production query_two_bits", "production update_two_bits"])
        // The same device with a new token: its bit is set.
        let again = try await register(AppleDeviceCheckStandIn.token("phone-a", 2))
        #expect(again.status == .conflict && again.code == "device_already_registered")
        // A debug build goes to the development host.
        #expect(try await register(AppleDeviceCheckStandIn.token("phone-b"), buildType: "debug").status == .created)
        #expect(apple.calls.withLock { $0 }.suffix(3).allSatisfy { $0.hasPrefix("development") })
        // The same token twice: the device's bit refuses it first; when Apple could not set the bit, the spent
        // token still does.
        let token = AppleDeviceCheckStandIn.token("phone-c")
        #expect(try await register(token).status == .created)
        #expect(try await register(token).code == "device_already_registered")
        let unmarkable = AppleDeviceCheckStandIn.token("unmarkable")
        #expect(try await register(unmarkable).status == .created)
        #expect(try await register(unmarkable).code == "invalid_proof")
        // Apple refuses a forged token: 400 attestation_untrusted. Apple unavailable: 503, nothing written.
        #expect(try await register(Data("forged".utf8).base64EncodedString()).code == "attestation_untrusted")
        let users = try await client.deployment.count("users")
        let limited = try await register(AppleDeviceCheckStandIn.token("rate-limited"))
        #expect(limited.status == .serviceUnavailable && limited.code == "temporarily_unavailable")
        #expect(try await register(AppleDeviceCheckStandIn.token("broken")).status == .serviceUnavailable)
        #expect(try await client.deployment.count("users") == users)
        #expect(try await register("not base64!").code == "attestation_malformed")
        #expect(try await register(AppleDeviceCheckStandIn.token("phone-d"), buildType: "beta").code == "invalid_input")
        }
    }

    @Test("A wrong team key is Apple's 401, which Latch answers 503 (its own misconfiguration, not the device's fault)")
    func wrongTeamKey() async throws {
        try await Self.withStandIn(teamKey: P256.Signing.PrivateKey()) { client, apple in
        let key = try PrivateKey.generate(.ES256)
        let reply = try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .deviceCheck, answer: AppleDeviceCheckStandIn.token("phone"),
                publicKey: RegistrationPublicKey(keyId: "dc", algorithm: "ES256", publicKey: key.publicKey.pemRepresentation), buildType: "release"))
        #expect(reply.status == .serviceUnavailable)
        }
    }
}
