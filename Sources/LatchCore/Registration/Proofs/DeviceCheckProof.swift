import Crypto
import Foundation
import LatchJOSE
import LatchModel
import Logging

/// `DEVICE_CHECK` (the Sudo Platform shape): `{answer: base64 DeviceCheck token, buildType: "debug" | "release",
/// vendorId, registrationId, publicKey}`. Latch asks Apple's DeviceCheck API — the development host for `debug`, the
/// production host for `release`, authenticated as the app's team — whether the token comes from a genuine Apple
/// device running the team's app (`validate_device_token`), and allows one registration per device with the
/// device's first bit (`query_two_bits`: set → `device_already_registered`; `update_two_bits` sets it once the user
/// exists). The request's public key becomes the device key; the username is a new random id.
///
/// A DeviceCheck token binds no key and no challenge: the token itself is spent (a token registers once), and
/// Apple answers for tokens it recently issued. Any answer of Apple's but 200 and 400, or none in time, is 503 and
/// registers nothing.
public struct DeviceCheckProof: RegistrationProof {
    public var proofType: RegistrationMethod { .deviceCheck }

    let apps: EvidenceApps
    let api: any DeviceCheckAPI
    let random: RandomSource
    let logger: Logger
    public var maximumAnswerBytes: Int? { 8 * 1024 }

    public init(apps: EvidenceApps, api: any DeviceCheckAPI, random: RandomSource, logger: Logger = Logger(label: "latch.attestation")) {
        self.apps = apps
        self.api = api
        self.random = random
        self.logger = logger
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard request.buildType == "debug" || request.buildType == "release" else {
            throw LatchError.invalidInput("buildType must be debug or release for DEVICE_CHECK registrations")
        }
        guard request.publicKey != nil else { throw LatchError.invalidInput("publicKey is required for DEVICE_CHECK registrations") }
        guard Data(base64Encoded: request.answer) != nil else { throw LatchError(.attestationMalformed, "answer must be the base64 DeviceCheck token") }
        if let vendorId = request.vendorId, vendorId.utf8.count > 128 { throw LatchError.invalidInput("vendorId is longer than 128 bytes") }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let deviceKey = try request.checkedDeviceKey(required: proofType)
        guard let credentials = try await apps.snapshot().deviceCheck.first?.credentials else {
            throw LatchError(.attestationAppMismatch, "no app has DeviceCheck credentials registered")
        }
        let token = request.answer
        let development = request.buildType == "debug"
        do {
            try await api.validate(token: token, credentials: credentials, development: development)
            let bits = try await api.queryBits(token: token, credentials: credentials, development: development)
            if bits?.bit0 == true { throw LatchError(.deviceAlreadyRegistered, "this device registered before (DeviceCheck)") }
            let api = self.api
            let logger = self.logger
            return VerifiedRegistration(
                username: random.uuid(), kind: .deviceCheck, deviceKey: deviceKey,
                deviceKeyAttestation: DeviceKeyAttestation(type: proofType.rawValue),
                consumes: .jti(Base64URL.encode(Data(SHA256.hash(data: Array(token.utf8)))), issuer: "latch:device-check", until: now.adding(seconds: 3600)),
                afterCommit: {
                    do {
                        try await api.updateBits(
                            DeviceCheckBits(bit0: true, bit1: bits?.bit1 ?? false), token: token, credentials: credentials, development: development)
                    } catch {
                        // The user exists; the device could register once more. Logged for the operator.
                        logger.warning("DeviceCheck bit not set after a registration", metadata: ["error": "\(error)"])
                    }
                })
        } catch let error as DeviceCheckAPIError {
            throw LatchError(error)
        }
    }
}
