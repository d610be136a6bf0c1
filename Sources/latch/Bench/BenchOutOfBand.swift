import ArgumentParser
import Foundation
import LatchModel
import LatchQR

/// The out-of-band scenarios of `latch bench`: `oob-enroll` — the admin API's enrollment of an existing user (a
/// transaction written, a link encoded as a QR PNG; one request) — and `oob-status` — the backend's status poll (one
/// request). Besides, ``qrRate()`` measures QR PNGs per second on one thread, without HTTP.
final class BenchOutOfBand: @unchecked Sendable {
    static let scenarios: Set<String> = ["oob-enroll", "oob-status"]

    let adminToken: String
    /// Per connection: the user enrolled and a status token to poll.
    var users: [(id: String, statusToken: String)] = []

    init(adminToken: String) {
        self.adminToken = adminToken
    }

    var headers: [(String, String)] { [("Content-Type", "application/json"), ("Authorization", "Bearer \(adminToken)")] }

    /// One user per connection, created by an enrollment whose status token the status scenario polls.
    func prepare(port: Int, connections: Int) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        for index in 0..<connections {
            let id = "oob-bench-\(index)-\(UUID().uuidString.prefix(8))"
            let (status, body) = try connection.send(
                "POST", "/admin/v1/users/\(id)/enrollments", headers: headers, body: Array(#"{"createUser": true}"#.utf8))
            guard status == 201, let answer = try? JSONDecoder().decode(OutOfBandEnrollmentResponse.self, from: Data(body)) else {
                throw ValidationError("setup enrollment failed: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
            users.append((id, answer.enrollment.statusToken))
        }
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        let users = users
        let headers = headers
        if name == "oob-enroll" {
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
                let (status, body) = try connection.send("POST", "/admin/v1/users/\(users[worker].id)/enrollments", headers: headers, body: Array("{}".utf8))
                return (1, status == 201, status == 201 ? nil : "\(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
        }
        return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
            let (status, body) = try connection.send(
                "POST", "/v1/oob/status", headers: [("Content-Type", "application/json")],
                body: Array(#"{"statusToken":"\#(users[worker].statusToken)"}"#.utf8))
            let pending = status == 200 && String(decoding: body, as: UTF8.self).contains(#""pending""#)
            return (1, pending, pending ? nil : "\(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
    }

    /// QR PNGs per second for a link of Latch's length (about 300 bytes: version 13-M) on one thread and on every core
    /// at once, the version and the PNG's size; each thread bounded to 0.5 s and 100,000 codes.
    static func qrRate(cores: Int) -> (rate: Double, allCores: Double, version: Int, linkBytes: Int, pngBytes: Int) {
        let link = "https://id.example.com/open?payload=" + String(repeating: "eyJjb250ZW50X3R5cGUiOiJhcHBsaWNhdGlvbi92bmQubGF0Y2gu", count: 5)
        @Sendable func measure() -> (rate: Double, version: Int, bytes: Int) {
            let start = LoadRunner.now()
            var count = 0
            var version = 0
            var bytes = 0
            while LoadRunner.now() - start < 0.5 && count < 100_000 {
                guard let code = try? QRCode(Array(link.utf8)) else { break }
                bytes = code.png().count
                version = code.version
                count += 1
            }
            return (Double(count) / (LoadRunner.now() - start), version, bytes)
        }
        let one = measure()
        let rates = Locked([Double]())
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            let rate = measure().rate
            rates.withLock { $0.append(rate) }
        }
        return (one.rate, rates.withLock { $0.reduce(0, +) }, one.version, link.utf8.count, one.bytes)
    }
}
