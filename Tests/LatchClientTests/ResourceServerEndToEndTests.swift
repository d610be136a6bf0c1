import Foundation
import LatchClient
import LatchJOSE
import LatchModel
import LatchServer
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The whole chain with nothing stood in: the SDK signs in to a live Latch with a DPoP proof, then calls the example
/// backend (`Examples/ResourceServerExample`, a process) through `authorizedRequest`; the backend verifies the
/// DPoP-bound Latch token with `LatchResourceServer`, fetching Latch's JWKS.
@Suite("SDK → Latch → example backend")
struct ResourceServerEndToEndTests {
    @Test("A DPoP-bound Latch token reaches the example backend with a proof and is accepted; replayed, as Bearer, or with another key it is refused")
    func boundTokenAtTheBackend() async throws {
        try await LiveLatch.run { latch in
            let folder = TemporaryDirectory(prefix: "latch-e2e")
            defer { folder.remove() }
            let port = try LoopbackPort.free()
            let backendURL = "http://127.0.0.1:\(port)"
            let backend = try await ExampleProcess(
                "ResourceServerExample",
                environment: ["LATCH_ISSUER": latch.url.absoluteString, "PORT": String(port), "HOST": "127.0.0.1", "EXTERNAL_BASE_URL": backendURL],
                output: folder.path + "/backend.log")
            do {
                let client = try UserClient(configuration: latch.configuration(), keyStore: InMemoryKeyStore())
                _ = try await client.registerWithAuthenticationProvider(try latch.testProvider())
                let tokens = try await client.signInWithKey()
                #expect(tokens.tokenType == "DPoP")
                let subject = try ParsedJWS(tokens.accessToken).claims["sub"]?.stringValue

                let request = try await client.authorizedRequest(URLRequest(url: URL(string: backendURL + "/hello")!))
                var (body, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")
                let answer = try JSONValue.parse(body)
                #expect(answer["subject"]?.stringValue == subject && answer["dpop"] == .bool(true))

                // The same request again: its proof was spent.
                (body, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 401, "\(String(decoding: body, as: UTF8.self))")
                // The token copied and sent as Bearer, or with a proof of another key.
                var stolen = URLRequest(url: URL(string: backendURL + "/hello")!)
                stolen.setValue("Bearer \(tokens.accessToken)", forHTTPHeaderField: "Authorization")
                (_, response) = try await URLSession.shared.data(for: stolen)
                #expect((response as? HTTPURLResponse)?.statusCode == 401)
                stolen.setValue("DPoP \(tokens.accessToken)", forHTTPHeaderField: "Authorization")
                stolen.setValue(
                    try DPoP.proof(
                        key: try PrivateKey.generate(.ES256), method: "GET", url: backendURL + "/hello", accessToken: tokens.accessToken,
                        jti: UUID().uuidString, issuedAt: Int64(Date().timeIntervalSince1970)),
                    forHTTPHeaderField: "DPoP")
                (body, response) = try await URLSession.shared.data(for: stolen)
                #expect((response as? HTTPURLResponse)?.statusCode == 401)
                #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "WWW-Authenticate")?.contains("invalid_dpop_proof") == true)
            } catch {
                _ = await backend.stop()
                throw error
            }
            _ = await backend.stop()
        }
    }
}
