import Foundation
import HTTPTypes
import LatchModel
import LatchTesting
import Testing

@Suite("OpenAPI document")
struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("Every path and method in docs/openapi.json is served (no drift between the document and the router)")
    func everyDocumentedRouteExists() async throws {
        let spec = try JSONValue.parse(Data(contentsOf: Self.root.appendingPathComponent("docs/openapi.json")))
        let paths = try #require(spec["paths"]?.objectValue)
        #expect(paths.count >= 20)
        try await Deployment.make().run { client in
            for (path, operations) in paths {
                let concrete = path.replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
                for method in operations.objectValue?.keys ?? [:].keys {
                    let reply = try await client.send(HTTPRequest.Method(method.uppercased())!, concrete, headers: [.authorization: "Bearer \(Deployment.adminToken)"])
                    #expect(reply.json["error_description"] != "no such endpoint", "\(method.uppercased()) \(path) is documented but not served")
                }
            }
        }
    }

    @Test("docs/openapi.json is a valid OpenAPI 3.1 document (openapi-spec-validator)", .requires(.openAPISpecValidator))
    func validates() async throws {
        try await Peer.openAPISpecValidator.require()
        let script = "import json,sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(open(sys.argv[1]))); print('valid')"
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", script, Self.root.appendingPathComponent("docs/openapi.json").path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("valid"), "\(output)")
    }
}
