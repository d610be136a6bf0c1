import Foundation
import LatchCore
import LatchModel
import LatchSQLite
import Logging

/// The SQLite writer's ceiling, measured in process (`latch bench --writer-ceiling`): the units of work a key sign-in
/// writes (spend its nonce, hold the user, insert the session, record the event), sent by many tasks at once so that
/// the single writer thread is always busy and commits in large groups — the regime of a many-core machine, where the
/// writer is what stops sign-ins from scaling. No HTTP, no signatures: only the store, so the figure is the same on a
/// 2-core and a 16-core machine up to the speed of one core and the disk's flushes.
struct WriterCeiling {
    var unitsPerSecond = 0.0
    /// The writer thread's CPU per unit (nil where /proc cannot tell).
    var writerMicroseconds: Double?
    /// Bytes the writer thread wrote per unit (WAL frames; nil where /proc cannot tell).
    var bytesPerUnit: Double?
    var unitsPerCommit = 0.0

    private struct Refused: Error {}

    /// Counts group commits and their units.
    private final class Commits: StoreObserver {
        let tally = Locked((commits: 0, units: 0))
        func committed(units: Int, nanoseconds: Int64) { tally.withLock { $0.commits += 1; $0.units += units } }
        func failed(_ operation: String) {}
    }

    /// Units done, and the counters when the warm-up ended.
    private final class Progress: Sendable {
        struct Mark {
            var counters: (ticks: Int, bytes: Int)?
            var commits: (commits: Int, units: Int)
            var units: Int
        }
        let done = Locked(0)
        let mark = Locked<Mark?>(nil)
    }

    /// The writer thread's CPU (clock ticks) and bytes written so far, from /proc.
    private static func writerCounters() -> (ticks: Int, bytes: Int)? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
        for task in tasks {
            let base = "/proc/self/task/\(task)/"
            guard (try? String(contentsOfFile: base + "comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == "latch-db-writer",
                let stat = try? String(contentsOfFile: base + "stat", encoding: .utf8), let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
            let io = (try? String(contentsOfFile: base + "io", encoding: .utf8)) ?? ""
            let written = io.split(separator: "\n").first { $0.hasPrefix("wchar:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
            return (user + system, written ?? 0)
        }
        return nil
    }

    /// Runs `tasks` writers for `seconds` (after one second of warm-up) against a fresh database of `users` users.
    static func measure(seconds: Double, tasks: Int = 512, users: Int = 10_000) async throws -> WriterCeiling {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("latch-writer-ceiling-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "latch.bench.writer")
        logger.logLevel = .warning
        let store = try SQLiteStore(path: directory + "/latch.sqlite", logger: logger)
        defer { store.close() }
        let random = RandomSource.system
        let now = Int64(Date().timeIntervalSince1970)
        let userIDs = (0..<users).map { _ in random.token(byteCount: 16) }
        for chunk in stride(from: 0, to: users, by: 1000) {
            let ids = userIDs[chunk..<min(users, chunk + 1000)]
            try await store.write { transaction in
                for id in ids {
                    transaction.insertUser(
                        User(id: id, username: "bench-\(id)", kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: now), ifTaken: Refused())
                }
            }
        }
        let commits = Commits()
        store.observers.set(commits)
        let clock = ContinuousClock()
        let warm = clock.now + .seconds(1)
        let end = warm + .seconds(seconds)
        let progress = Progress()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The server's sealer: a pass a second, on the same writer.
            group.addTask {
                while clock.now < end {
                    try await Task.sleep(for: .seconds(1))
                    try await store.sealAudit()
                }
            }
            for _ in 0..<tasks {
                group.addTask {
                    while clock.now < end {
                        let at = Int64(Date().timeIntervalSince1970)
                        let userID = userIDs[Int.random(in: 0..<users)]
                        // A sign-in nonce's shape: lsn_<time-ordered random>.<expiry>.<43-character MAC>.
                        let nonce = "lsn_\(random.timeOrderedToken(now: Date())).\(at + 300).\(random.token(byteCount: 32))"
                        let session = Session(
                            id: random.timeOrderedID(now: Date()), userID: userID, clientID: "default", authTime: at, amr: ["pop"],
                            scope: "openid", createdAt: at, expiresAt: at + 30 * 86400)
                        let event = SecurityEvent(
                            id: random.timeOrderedID(now: Date()), at: at, kind: .signInSucceeded, actor: "user", userID: userID, sessionID: session.id,
                            clientID: "default", detail: "amr=pop", address: "127.0.0.1", userAgent: "latch-bench", requestID: random.token(byteCount: 8))
                        try await store.write { transaction in
                            transaction.consume(.jti(nonce, issuer: SignInNonces.consumedIssuer, until: at + 300), ifUnavailable: Refused())
                            transaction.requireUser(id: userID, ifMissing: Refused())
                            transaction.insertSession(session)
                            transaction.record(event)
                        }
                        let count = progress.done.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        if clock.now >= warm {
                            progress.mark.withLock { if $0 == nil { $0 = Progress.Mark(counters: writerCounters(), commits: commits.tally.withLock { $0 }, units: count) } }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let finalCounters = writerCounters()
        let finalCommits = commits.tally.withLock { $0 }
        guard let start = progress.mark.withLock({ $0 }) else { return WriterCeiling() }
        let units = Double(progress.done.withLock { $0 } - start.units)
        var ceiling = WriterCeiling()
        ceiling.unitsPerSecond = units / seconds
        ceiling.unitsPerCommit = Double(finalCommits.units - start.commits.units) / Double(max(1, finalCommits.commits - start.commits.commits))
        if let first = start.counters, let last = finalCounters, units > 0 {
            ceiling.writerMicroseconds = Double(last.ticks - first.ticks) / Double(sysconf(Int32(_SC_CLK_TCK))) * 1e6 / units
            ceiling.bytesPerUnit = Double(last.bytes - first.bytes) / units
        }
        return ceiling
    }
}
