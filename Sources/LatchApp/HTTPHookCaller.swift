import AsyncHTTPClient
import Foundation
import LatchCore
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Calls custom-registration hooks over HTTP(S) with async-http-client: a client of its own that never follows
/// redirects, the provider's timeout, an answer capped at `maximumAnswerBytes`, and ``HookAddressPolicy`` applied to the URL
/// and to every address its host resolves to before the call.
///
/// The resolution is checked, then async-http-client resolves again to connect: a host whose DNS answer changes in
/// between (rebinding) is not caught. Deployments that must rule it out put hooks behind an egress proxy or allowlist.
struct HTTPHookCaller: HookCaller {
    let policy: HookAddressPolicy
    var maximumAnswerBytes = 1024 * 1024

    func post(url: String, body: [UInt8], headers: [(String, String)], timeoutSeconds: Int64) async -> Result<HookAnswer, HookCallError> {
        if let problem = policy.urlProblem(url) { return .failure(.refused(problem)) }
        if !policy.allowPrivateAddresses {
            guard let host = URLComponents(string: url)?.host else { return .failure(.refused("the hook URL has no host")) }
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            let addresses = await Self.resolve(bare)
            guard !addresses.isEmpty else { return .failure(.network("the hook host \(bare) does not resolve")) }
            for address in addresses {
                if let problem = policy.addressProblem(address) { return .failure(.refused(problem)) }
            }
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(body)
        do {
            let response = try await HTTPClient.noRedirects.traced(request, timeout: .seconds(timeoutSeconds), span: "hook")
            if (300...399).contains(Int(response.status.code)) { return .failure(.redirect(Int(response.status.code))) }
            let collected: ByteBuffer
            do {
                collected = try await response.body.collect(upTo: maximumAnswerBytes)
            } catch is NIOTooManyBytesError {
                return .failure(.tooLarge)
            }
            return .success(HookAnswer(status: Int(response.status.code), body: Array(collected.readableBytesView)))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(.timeout)
        } catch {
            return .failure(.network(String(describing: error).prefix(200).description))
        }
    }

    /// Every numeric address `host` resolves to (getaddrinfo, on a thread of its own).
    static func resolve(_ host: String) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                #if canImport(Glibc)
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                #else
                hints.ai_socktype = SOCK_STREAM
                #endif
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else {
                    continuation.resume(returning: [])
                    return
                }
                defer { freeaddrinfo(first) }
                var addresses: [String] = []
                var cursor: UnsafeMutablePointer<addrinfo>? = first
                while let entry = cursor {
                    var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(entry.pointee.ai_addr, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                        addresses.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                    }
                    cursor = entry.pointee.ai_next
                }
                continuation.resume(returning: addresses)
            }
        }
    }
}
