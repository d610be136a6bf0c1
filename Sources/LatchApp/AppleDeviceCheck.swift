import AsyncHTTPClient
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import NIOCore
import NIOHTTP1

/// Apple's DeviceCheck server API over HTTPS (async-http-client): `POST /v1/validate_device_token`,
/// `/v1/query_two_bits`, `/v1/update_two_bits`, each with `Authorization: Bearer <ES256 JWT {kid} {iss: team id,
/// iat}>` signed by the team's key. 200 is yes; 400 is a bad token; anything else, or no answer within the timeout,
/// is unavailable (the registration answers 503 and writes nothing).
final class AppleDeviceCheck: DeviceCheckAPI {
    let productionURL: String
    let developmentURL: String
    let timeout: TimeAmount
    let client: HTTPClient
    let clock: LatchClock
    let random: RandomSource
    /// Signed authentication tokens by team and key, reused for 20 minutes (Apple accepts them for an hour).
    private let tokens = Locked<[String: (token: String, issuedAt: Int64)]>([:])

    init(productionURL: String, developmentURL: String, timeoutSeconds: Int64, client: HTTPClient = .shared, clock: LatchClock, random: RandomSource) {
        self.productionURL = productionURL
        self.developmentURL = developmentURL
        self.timeout = .seconds(timeoutSeconds)
        self.client = client
        self.clock = clock
        self.random = random
    }

    func validate(token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError) {
        _ = try await call("validate_device_token", token: token, extra: [:], credentials: credentials, development: development)
    }

    func queryBits(token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError) -> DeviceCheckBits? {
        let body = try await call("query_two_bits", token: token, extra: [:], credentials: credentials, development: development)
        // Bits never set: a 200 whose body is text ("Failed to find bit state"; Apple's documentation says "Bit State
        // Not Found"), not JSON.
        guard case .object(let fields)? = try? JSONValue.parse(Data(body)) else { return nil }
        guard case .bool(let bit0)? = fields["bit0"], case .bool(let bit1)? = fields["bit1"] else { return nil }
        return DeviceCheckBits(bit0: bit0, bit1: bit1)
    }

    func updateBits(_ bits: DeviceCheckBits, token: String, credentials: DeviceCheckCredentials, development: Bool) async throws(DeviceCheckAPIError) {
        _ = try await call(
            "update_two_bits", token: token, extra: ["bit0": .bool(bits.bit0), "bit1": .bool(bits.bit1)], credentials: credentials, development: development)
    }

    private func call(
        _ operation: String, token: String, extra: [String: JSONValue], credentials: DeviceCheckCredentials, development: Bool
    ) async throws(DeviceCheckAPIError) -> [UInt8] {
        var body = extra
        body["device_token"] = .string(token)
        body["transaction_id"] = .string(random.uuid())
        body["timestamp"] = .int(Int64(clock.now().timeIntervalSince1970 * 1000))
        var request = HTTPClientRequest(url: (development ? developmentURL : productionURL) + "/v1/" + operation)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer " + (try authentication(credentials)))
        request.body = .bytes(JSONValue.object(body).serialized())
        do {
            let response = try await client.traced(request, timeout: timeout, span: "devicecheck \(operation)")
            let answer = Array(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
            switch response.status.code {
            case 200: return answer
            case 400: throw DeviceCheckAPIError.badToken(String(decoding: answer.prefix(200), as: UTF8.self))
            default: throw DeviceCheckAPIError.unavailable("\(operation) answered HTTP \(response.status.code)")
            }
        } catch let error as DeviceCheckAPIError {
            throw error
        } catch {
            throw .unavailable("\(operation): \(error)")
        }
    }

    private func authentication(_ credentials: DeviceCheckCredentials) throws(DeviceCheckAPIError) -> String {
        let now = clock.seconds()
        let cacheKey = credentials.teamID + "." + credentials.keyID
        if let cached = tokens.withLock({ $0[cacheKey] }), now - cached.issuedAt < 1200 { return cached.token }
        do {
            let token = try JWSSigner(key: PrivateKey(p256: credentials.privateKey), keyID: credentials.keyID).sign(claims: [
                "iss": .string(credentials.teamID), "iat": .int(now),
            ])
            tokens.withLock { $0[cacheKey] = (token, now) }
            return token
        } catch {
            throw .unavailable("the DeviceCheck key cannot sign: \(error)")
        }
    }
}
