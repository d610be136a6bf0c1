import AsyncHTTPClient
import Foundation
import LatchCore
import NIOCore
import NIOHTTP1

/// Calls upstream identity providers with async-http-client: no redirects followed (a redirect is an answer like any
/// other, refused by the caller), answers capped at 1 MiB, each call bounded by its timeout. Upstreams are configured
/// by admins, so their addresses are not filtered like hooks'; their URLs must be https (http only on loopback).
struct AsyncUpstreamHTTPClient: UpstreamHTTPClient {
    var maximumAnswerBytes = 1024 * 1024

    func get(_ url: String, bearer: String?, timeout: Int64) async throws -> UpstreamResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        return try await execute(request, timeout: timeout)
    }

    func postForm(_ url: String, _ form: [(String, String)], basic: (user: String, password: String)?, timeout: Int64) async throws
        -> UpstreamResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        if let basic {
            let credentials = Data("\(basic.user):\(basic.password)".utf8).base64EncodedString()
            request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        }
        request.body = .bytes(Array(FormEncoding.query(form).utf8))
        return try await execute(request, timeout: timeout)
    }

    private func execute(_ request: HTTPClientRequest, timeout: Int64) async throws -> UpstreamResponse {
        let response = try await HTTPClient.noRedirects.traced(request, timeout: .seconds(timeout), span: "upstream")
        let body = try await response.body.collect(upTo: maximumAnswerBytes)
        return UpstreamResponse(status: Int(response.status.code), body: Array(body.readableBytesView))
    }
}
