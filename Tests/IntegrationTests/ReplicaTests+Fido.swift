import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ReplicaTests {
    @Test("Across two replicas: one FIDO ceremony signs in once; a stranger's assertions (no or a forged PIN binding) count nothing; ten wrong PINs at once count to exactly the lockout; one sign-up ceremony creates one user; one out-of-band token is redeemed once")
    func fidoRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let fido = ["LATCH_FIDO_PIN_COOL_DOWNS": "0"]
        let (a, b) = try await startTwoReplicas(directory, extra: fido)
        try await Self.setUp(a.base, users: ["fido"])
        let (_, signedIn) = try await Self.signIn(b.base, "fido")
        let access = try #require(signedIn["access_token"]?.stringValue)
        let (_, me) = try await http("GET", a.base + "/oauth2/userinfo", bearer: access)
        let userID = try #require(me["sub"]?.stringValue)
        let userHandle = Base64URL.encode(Data(userID.utf8))
        // The relying party is the issuer's host (https://id.replicas.test).
        let authenticator = TestWebAuthnAuthenticator(
            rpID: "id.replicas.test", origin: "https://id.replicas.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
        // Bound to its device, as the SDK registers it: only its own wrong PINs count (docs/fido.md, "PIN binding").
        authenticator.bindingKey = P256.Signing.PrivateKey()
        let (_, options) = try await jsonRequest("POST", a.base + "/v1/fido/registration/options", body: [String: String](), bearer: access)
        let challenge = try #require(options["publicKey"]?["challenge"]?.stringValue)
        let (registered, _) = try await jsonRequest(
            "POST", b.base + "/v1/fido/registration",
            body: JSONValue.object(["ceremonyId": options["ceremonyId"] ?? .null, "credential": authenticator.register(challenge: challenge)]),
            bearer: access)
        #expect(registered == 201)

        // 1. One ceremony, one assertion, ten token requests at once split across the replicas: one session.
        let (_, signInOptions) = try await jsonRequest("POST", b.base + "/v1/fido/authentication/options", body: [String: String]())
        let ceremony = try #require(signInOptions["ceremonyId"]?.stringValue)
        let credential = try authenticator.assert(
            challenge: try #require(signInOptions["publicKey"]?["challenge"]?.stringValue), userHandle: userHandle, counter: 0)
        let signIns = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, _) = try? await Self.token(
                        base, ["grant_type": GrantType.webauthn, "ceremony_id": ceremony, "credential": credential])
                    else { return }
                    signIns.add(status)
                }
            }
        }
        #expect(signIns[200] == 1 && signIns[400] == 9, "\(signIns.counts.withLock { $0 })")
        // The nine refused were the right PIN: no try is spent on them, whatever the interleaving.
        let (_, afterRace) = try await jsonRequest(
            "POST", a.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(afterRace["remainingTries"]?.intValue == 5, "\(afterRace)")

        // 2a. A stranger (random keys, UV set, no binding or a forged one) sends maxAttempts + 2 assertions across the
        // replicas: each refused for its binding, none counted.
        authenticator.signWith = P256.Signing.PrivateKey()
        for attempt in 0..<7 {
            let base = attempt.isMultiple(of: 2) ? a.base : b.base
            authenticator.omitBinding = attempt.isMultiple(of: 2)
            authenticator.bindWith = P256.Signing.PrivateKey()
            let (_, options) = try await jsonRequest("POST", base + "/v1/fido/authentication/options", body: [String: String]())
            let forged = try authenticator.assert(
                challenge: try #require(options["publicKey"]?["challenge"]?.stringValue), userHandle: userHandle, counter: 0)
            let (status, answer) = try await Self.token(
                base, ["grant_type": GrantType.webauthn, "ceremony_id": options["ceremonyId"]?.stringValue ?? "", "credential": forged])
            #expect(status == 400 && answer["reason"] == "pin_binding_invalid" && answer["pinStatus"] == nil, "\(answer)")
        }
        authenticator.omitBinding = false
        authenticator.bindWith = nil
        let (_, afterStranger) = try await jsonRequest(
            "POST", b.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(afterStranger == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": true])

        // 2. Ten wrong PINs at once from the device across the replicas: five are counted (tries 4, 3, 2, 1, then
        // locked), the rest find it locked; never more, never fewer.
        let remaining = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (_, options) = try? await jsonRequest("POST", base + "/v1/fido/authentication/options", body: [String: String]()),
                        let ceremony = options["ceremonyId"]?.stringValue, let challenge = options["publicKey"]?["challenge"]?.stringValue,
                        let credential = try? authenticator.assert(challenge: challenge, userHandle: userHandle, counter: 0),
                        let (status, answer) = try? await Self.token(
                            base, ["grant_type": GrantType.webauthn, "ceremony_id": ceremony, "credential": credential])
                    else { return }
                    #expect(status == 400 && answer["error"] == "invalid_grant", "\(answer)")
                    if case .int(let tries)? = answer["pinStatus"]?["remainingTries"] { remaining.add(Int(tries)) }
                }
            }
        }
        let counted = remaining.counts.withLock { $0 }
        #expect(counted == [4: 1, 3: 1, 2: 1, 1: 1, 0: 6], "\(counted)")
        let (_, status) = try await jsonRequest(
            "POST", a.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(status == ["state": "lockedOut", "remainingTries": 0, "coolDown": 0, "bound": true])

        // 3. One passwordless sign-up ceremony completed ten times at once (each with its own registrationId) across
        // the replicas: one user is created, the others are refused.
        let (_, signUp) = try await jsonRequest("POST", a.base + "/v1/fido/sign-up/options", body: ["username": "racer"])
        let newcomer = TestWebAuthnAuthenticator(rpID: "id.replicas.test", origin: "https://id.replicas.test")
        let answer: JSONValue = .object([
            "ceremonyId": signUp["ceremonyId"] ?? .null,
            "credential": newcomer.register(challenge: try #require(signUp["publicKey"]?["challenge"]?.stringValue)),
        ])
        let answerText = String(decoding: answer.serialized(), as: UTF8.self)
        let signUps = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    let request = RegistrationRequest(challengeType: .webauthn, answer: answerText, registrationId: "race-\(worker)")
                    guard let (status, _) = try? await jsonRequest("POST", base + "/v1/registrations", body: request) else { return }
                    signUps.add(status)
                }
            }
        }
        #expect(signUps[201] == 1 && signUps[409] == 9, "\(signUps.counts.withLock { $0 })")

        // 4. One out-of-band token redeemed ten times at once across the replicas: one ceremony; the others are told
        // the token was redeemed.
        var enrollRequest = URLRequest(url: URL(string: a.base + "/admin/v1/users/oob-racer/enrollments")!)
        enrollRequest.httpMethod = "POST"
        enrollRequest.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization")
        enrollRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        enrollRequest.httpBody = Data(#"{"createUser": true}"#.utf8)
        let (enrolled, _) = try await URLSession.shared.data(for: enrollRequest)
        let link = try #require((try JSONValue.parse(enrolled))["enrollment"]?["appLinkUri"]?.stringValue)
        let payload = try OutOfBandPayload(decoding: link)
        let redeems = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, answer) = try? await jsonRequest(
                        "POST", base + "/v1/oob/redeem/registration", body: OutOfBandRedeemRequest(token: payload.data.token))
                    else { return }
                    redeems.add(status)
                    if let code = answer["error"]?.stringValue { redeems.codes.withLock { _ = $0.insert(code) } }
                }
            }
        }
        #expect(redeems[200] == 1 && redeems[400] == 9, "\(redeems.counts.withLock { $0 })")
        #expect(redeems.codes.withLock { $0 } == ["oob_token_redeemed"])
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}
