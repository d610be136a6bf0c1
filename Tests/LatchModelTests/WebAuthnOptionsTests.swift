import Foundation
import LatchModel
import Testing

@Suite("WebAuthn options (Level 3 JSON)")
struct WebAuthnOptionsTests {
    /// The registration sample of WebAuthn Level 3 §1.3.1 in its JSON form (§5.1.8): bytes as base64url, the sample's
    /// challenge completed to 32 bytes, with `hints` and transports from Level 3.
    static let creationSample = #"""
        {
          "rp": {"name": "ACME Corporation"},
          "user": {"id": "MIIBkzCCATigAwIBAjCCAZMwggE4oAMCAQIwggGTMII", "name": "alex.mueller@example.com", "displayName": "Alex Müller"},
          "challenge": "FR9pAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
          "pubKeyCredParams": [{"type": "public-key", "alg": -7}, {"type": "public-key", "alg": -257}],
          "authenticatorSelection": {"userVerification": "preferred"},
          "timeout": 360000,
          "excludeCredentials": [
            {"id": "ufJWp8YGlibm1Kd9XQBWN1WAw2jy5In2Xhon9HAqcXE", "type": "public-key", "transports": ["usb", "nfc"]},
            {"id": "E_e1dhZc--mIsz4f9hb6NifAzJpF1V4mEtRlIPBiWdY", "type": "public-key"}
          ],
          "hints": ["security-key"],
          "attestation": "none",
          "extensions": {"appidExclude": "https://acme.example.com"}
        }
        """#

    /// The authentication sample of WebAuthn Level 3 §1.3.3 in its JSON form (§5.1.9).
    static let requestSample = #"""
        {
          "challenge": "BGUPAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
          "timeout": 120000,
          "rpId": "acme.example.com",
          "allowCredentials": [{"type": "public-key", "id": "ufJWp8YGlibm1Kd9XQBWN1WAw2jy5In2Xhon9HAqcXE", "transports": ["internal", "hybrid"]}],
          "userVerification": "required",
          "extensions": {"txAuthSimple": "Wave your hands in the air like you just don't care"}
        }
        """#

    static func json(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test("The Level 3 registration sample decodes member by member and encodes back to the same JSON")
    func creationSample() throws {
        let source = try Self.json(Self.creationSample)
        let options = try source.decoded(as: PublicKeyCredentialCreationOptionsJSON.self)
        #expect(options.rp == PublicKeyCredentialRpEntity(id: nil, name: "ACME Corporation"))
        #expect(options.user.id.data == Data(base64Encoded: "MIIBkzCCATigAwIBAjCCAZMwggE4oAMCAQIwggGTMII="))
        #expect(options.user.name == "alex.mueller@example.com" && options.user.displayName == "Alex Müller")
        #expect(Array(options.challenge.data.prefix(3)) == [21, 31, 105] && options.challenge.data.count == 32)
        #expect(options.pubKeyCredParams == [.init(alg: -7), .init(alg: -257)])
        #expect(options.authenticatorSelection == AuthenticatorSelectionCriteria(userVerification: .preferred))
        #expect(options.timeout == 360_000 && options.hints == [.securityKey] && options.attestation == AttestationConveyancePreference.none)
        let excluded = try #require(options.excludeCredentials)
        let standard = ["ufJWp8YGlibm1Kd9XQBWN1WAw2jy5In2Xhon9HAqcXE=", "E/e1dhZc++mIsz4f9hb6NifAzJpF1V4mEtRlIPBiWdY="]
        #expect(excluded.map(\.id.data) == standard.compactMap { Data(base64Encoded: $0) })
        #expect(excluded[0].transports == [.usb, .nfc] && excluded[1].transports == nil && excluded.allSatisfy { $0.type == .publicKey })
        #expect(options.extensions == ["appidExclude": "https://acme.example.com"])
        #expect(try JSONValue(encoding: options) == source)
    }

    @Test("The Level 3 authentication sample decodes member by member and encodes back to the same JSON")
    func requestSample() throws {
        let source = try Self.json(Self.requestSample)
        let options = try source.decoded(as: PublicKeyCredentialRequestOptionsJSON.self)
        #expect(Array(options.challenge.data.prefix(3)) == [4, 101, 15] && options.timeout == 120_000 && options.rpId == "acme.example.com")
        let credential = try #require(Base64URLBytes(base64URL: "ufJWp8YGlibm1Kd9XQBWN1WAw2jy5In2Xhon9HAqcXE"))
        #expect(options.allowCredentials == [.init(id: credential, transports: [.internal, .hybrid])])
        #expect(options.userVerification == .required && options.hints == nil)
        #expect(try JSONValue(encoding: options) == source)
    }

    @Test("Latch's options envelope keeps its members and values on the wire")
    func latchEnvelope() throws {
        let credential = Base64URLBytes([1, 2, 3])
        let creation = FidoCreationOptions(
            ceremonyId: "lfc_1",
            publicKey: .init(
                rp: .init(id: "login.latch.test", name: "Latch"), user: .init(id: Base64URLBytes("user-1".utf8), name: "ada", displayName: "ada"),
                challenge: Base64URLBytes([UInt8](repeating: 7, count: 32)), pubKeyCredParams: [.init(alg: -7), .init(alg: -257)], timeout: 300_000,
                excludeCredentials: [.init(id: credential)],
                authenticatorSelection: .init(residentKey: .required, requireResidentKey: true, userVerification: .required), attestation: .direct))
        let expected: JSONValue = [
            "ceremonyId": "lfc_1",
            "publicKey": [
                "rp": ["id": "login.latch.test", "name": "Latch"], "user": ["id": "dXNlci0x", "name": "ada", "displayName": "ada"],
                "challenge": .string(String(repeating: "BwcH", count: 10) + "Bwc"),
                "pubKeyCredParams": [["type": "public-key", "alg": -7], ["type": "public-key", "alg": -257]], "timeout": 300_000,
                "excludeCredentials": [["type": "public-key", "id": "AQID"]],
                "authenticatorSelection": ["residentKey": "required", "requireResidentKey": true, "userVerification": "required"],
                "attestation": "direct",
            ],
        ]
        #expect(creation.json == expected)
        #expect(try expected.decoded(as: FidoCreationOptions.self) == creation)

        let request = FidoRequestOptions(
            ceremonyId: "lfc_2",
            publicKey: .init(challenge: Base64URLBytes([9, 9]), timeout: 300_000, rpId: "login.latch.test", allowCredentials: [], userVerification: .preferred))
        let expectedRequest: JSONValue = [
            "ceremonyId": "lfc_2",
            "publicKey": ["challenge": "CQk", "timeout": 300_000, "rpId": "login.latch.test", "allowCredentials": [], "userVerification": "preferred"],
        ]
        #expect(request.json == expectedRequest)
        #expect(try expectedRequest.decoded(as: FidoRequestOptions.self) == request)
    }

    @Test("Members and enumeration values a newer server sends are tolerated; malformed bytes are not")
    func tolerance() throws {
        var source = try Self.json(Self.requestSample)
        guard case .object(var members) = source else { Issue.record("not an object"); return }
        members["futureMember"] = ["anything": [1, 2]]
        members["userVerification"] = "sometimes"
        members["hints"] = ["client-device", "telepathy"]
        members["allowCredentials"] = [["type": "future-key", "id": "AQ", "transports": ["quantum"]]]
        source = .object(members)
        let options = try source.decoded(as: PublicKeyCredentialRequestOptionsJSON.self)
        #expect(options.userVerification?.rawValue == "sometimes" && options.hints == [.clientDevice, "telepathy"])
        #expect(options.allowCredentials?.first?.type.rawValue == "future-key" && options.allowCredentials?.first?.transports == ["quantum"])

        for challenge: JSONValue in ["AQ==", "AR", "not base64url!", "+/8", 5] {
            members["challenge"] = challenge
            #expect(throws: DecodingError.self) { try JSONValue.object(members).decoded(as: PublicKeyCredentialRequestOptionsJSON.self) }
        }
        #expect(Base64URLBytes(base64URL: "_-8") == Base64URLBytes([0xFF, 0xEF]) && Base64URLBytes([0xFF, 0xEF]).base64URL == "_-8")
    }
}
