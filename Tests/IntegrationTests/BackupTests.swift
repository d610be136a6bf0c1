import Foundation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A stop signal for load tasks.
final class StopFlag: Sendable {
    private let stopped = Locked(false)
    func stop() { stopped.withLock { $0 = true } }
    var isStopped: Bool { stopped.withLock { $0 } }
}

/// `latch admin backup` / `restore` against live `latch serve` processes, and the data-folder refusals.
@Suite("Backup and restore", .serialized)
struct BackupTests {
    static let issuer = "https://id.backup.test"

    static func server(_ folder: String, extra: [String: String] = [:]) throws -> LatchServer {
        try LatchServer(
            dataDirectory: folder, port: try freePort(),
            environment: [
                "LATCH_ADMIN_TOKEN": ReplicaTests.adminToken, "LATCH_ISSUER": issuer, "LATCH_LOG_LEVEL": "warning", "LATCH_RATE_LIMIT_PER_MINUTE": "0",
            ].merging(extra) { _, new in new })
    }

    /// Verifies a JWT's signature against the JWKS `base` publishes, and its issuer.
    static func verifies(_ token: String, at base: String) async throws -> Bool {
        let (data, _) = try await URLSession.shared.data(from: URL(string: base + "/.well-known/jwks.json")!)
        let keys = try PublicKey.signingKeys(ofJWKS: Array(data))
        let parsed = try ParsedJWS(token)
        guard let kid = parsed.keyID, let key = keys[kid], (try? parsed.verify(with: key)) != nil else { return false }
        return parsed.claims["iss"]?.stringValue == issuer
    }

    static func refresh(_ base: String, _ token: String) async throws -> (Int, JSONValue) {
        try await ReplicaTests.token(base, ["grant_type": "refresh_token", "refresh_token": token])
    }

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int ?? -1) & 0o777
    }

    @Test("Backup under load (sign-ins and refreshes running), restore into a fresh folder, a server on it: earlier ID and access tokens verify against its JWKS, refresh tokens rotated after the backup are refused, the file is 0600")
    func backupUnderLoadAndRestore() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let original = try Self.server(data)
        try await original.waitUntilListening()
        let workers = 3
        try await ReplicaTests.setUp(original.base, users: ["alice", "bob"] + (0..<workers).map { "worker\($0)" })

        // Before the backup: alice's tokens (kept unrotated) and bob's family (rotated after the backup).
        let (aliceStatus, alice) = try await ReplicaTests.signIn(original.base, "alice")
        #expect(aliceStatus == 200)
        let idToken = try #require(alice["id_token"]?.stringValue)
        let accessToken = try #require(alice["access_token"]?.stringValue)
        let aliceRefresh = try #require(alice["refresh_token"]?.stringValue)
        let bobRefresh = try #require(try await ReplicaTests.signIn(original.base, "bob").1["refresh_token"]?.stringValue)

        // Load: each worker signs in and refreshes until stopped (at most 400 rounds, 90 s).
        let tally = Tally()
        let stop = StopFlag()
        let base = original.base
        let backupFile = directory.path + "/latch.backup"
        let latch = try latchExecutable().path
        let (backupStatus, backupOutput, duringBackup) = try await withThrowingTaskGroup(of: Void.self, returning: (Int32, String, Int).self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let deadline = Date().addingTimeInterval(90)
                    for _ in 0..<400 {
                        guard !stop.isStopped, Date() < deadline else { break }
                        let (status, signedIn) = try await ReplicaTests.signIn(base, "worker\(worker)")
                        tally.add(status)
                        guard let token = signedIn["refresh_token"]?.stringValue else { continue }
                        tally.add(try await Self.refresh(base, token).0)
                    }
                }
            }
            // Load first, then the backup in the middle of it.
            let started = Date()
            while tally[200] < 10, Date().timeIntervalSince(started) < 30 { try await Task.sleep(for: .milliseconds(20)) }
            let before = tally[200]
            let (status, output) = try await run(latch, ["admin", "backup", "--data-dir", data, "--out", backupFile])
            let during = tally[200] - before
            // Some more load after the backup, then stop.
            try await Task.sleep(for: .milliseconds(300))
            stop.stop()
            try await group.waitForAll()
            return (status, output, during)
        }
        #expect(backupStatus == 0, "\(backupOutput)\n\(original.log)")
        #expect(backupOutput.contains("backup written: ") && backupOutput.contains("schema version"))
        #expect(tally.statuses == [200], "the load saw \(tally.counts.withLock { $0 })")
        #expect(duringBackup > 0, "no request completed while the backup ran")
        #expect(Self.mode(backupFile) == 0o600)
        // The server's files are as they were; nothing of the backup is left in the folder or beside the file.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".latch-backup") }.isEmpty)

        // After the backup: bob's family rotates once, a new user signs in.
        let (bobStatus, bobRotated) = try await Self.refresh(original.base, bobRefresh)
        #expect(bobStatus == 200)
        let bobAfter = try #require(bobRotated["refresh_token"]?.stringValue)
        let jwks = try await http("GET", original.base + "/.well-known/jwks.json").1
        #expect(try await original.terminate() == 0)

        // Restore into a fresh folder, and a server on it.
        let restoredFolder = directory.path + "/restored"
        let (restoreStatus, restoreOutput) = try await run(latch, ["admin", "restore", "--from", backupFile, "--data-dir", restoredFolder])
        #expect(restoreStatus == 0, "\(restoreOutput)")
        #expect(restoreOutput.contains("sessions ended"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: restoredFolder).sorted() == ["latch.sqlite", "master.key"])
        #expect(Self.mode(restoredFolder) == 0o700 && Self.mode(restoredFolder + "/latch.sqlite") == 0o600 && Self.mode(restoredFolder + "/master.key") == 0o600)
        let restored = try Self.server(restoredFolder)
        try await restored.waitUntilListening()

        // Same signing keys: tokens issued before the backup verify against the restored server's JWKS.
        #expect(try await http("GET", restored.base + "/.well-known/jwks.json").1 == jwks)
        #expect(try await Self.verifies(idToken, at: restored.base))
        #expect(try await Self.verifies(accessToken, at: restored.base))
        // Refresh tokens: the one rotated after the backup is refused, as a reuse would be; so is its successor (made
        // after the backup, unknown to it), and — sessions were ended by the restore — the one never rotated.
        let bobOld = try await Self.refresh(restored.base, bobRefresh)
        #expect(bobOld.0 == 400 && bobOld.1["error"] == "invalid_grant", "\(bobOld)")
        let bobNew = try await Self.refresh(restored.base, bobAfter)
        #expect(bobNew.0 == 400 && bobNew.1["error"] == "invalid_grant", "\(bobNew)")
        #expect(try await Self.refresh(restored.base, aliceRefresh).0 == 400)
        // Users, issuers and keys are there: a new sign-in works, and its token verifies.
        let (againStatus, again) = try await ReplicaTests.signIn(restored.base, "alice")
        #expect(againStatus == 200)
        #expect(try await Self.verifies(try #require(again["id_token"]?.stringValue), at: restored.base))
        #expect(try await Self.refresh(restored.base, try #require(again["refresh_token"]?.stringValue)).0 == 200)
        // The audit log came along and its chain verifies.
        let (auditStatus, audit) = try await http("GET", restored.base + "/admin/v1/audit/verify", bearer: ReplicaTests.adminToken)
        #expect(auditStatus == 200 && audit["verified"] == .bool(true), "\(audit)")
        #expect(try await restored.terminate() == 0)

        // --keep-sessions (a backup no server used afterwards): the family live at the backup refreshes.
        let kept = directory.path + "/kept"
        let (keptStatus, keptOutput) = try await run(latch, ["admin", "restore", "--from", backupFile, "--data-dir", kept, "--keep-sessions"])
        #expect(keptStatus == 0, "\(keptOutput)")
        let keptServer = try Self.server(kept)
        try await keptServer.waitUntilListening()
        #expect(try await Self.refresh(keptServer.base, aliceRefresh).0 == 200)
        #expect(try await keptServer.terminate() == 0)
    }

    @Test("Data-folder commands refuse a folder without a deployment (exit 13, naming it and what was expected) and create nothing; bootstrap --init makes one; backup on PostgreSQL exits 14; admin --help tells folder commands from API ones")
    func dataFolderRefusals() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let latch = try latchExecutable().path
        let empty = directory.path + "/typo"
        let absent = ["LATCH_ADMIN_TOKEN": "", "LATCH_KEYS_ENCRYPTION_KEY": "", "LATCH_DATABASE_URL": ""]
        let environment = ProcessInfo.processInfo.environment.filter { absent[$0.key] == nil }
        func latchRun(_ arguments: [String], _ extra: [String: String] = [:]) async throws -> (Int32, String) {
            try await ChildProcess.run(latch, arguments, environment: environment.merging(extra) { _, new in new }, timeout: 120)
        }

        for arguments in [
            ["admin", "bootstrap", "--data-dir", empty, "--username", "owner"],
            ["admin", "backup", "--data-dir", empty, "--out", directory.path + "/never.backup"],
            ["keys", "list", "--data-dir", empty],
            ["keys", "rotate", "--data-dir", empty],
        ] {
            let (status, output) = try await latchRun(arguments)
            #expect(status == 13, "\(arguments): \(status) \(output)")
            #expect(output.contains(DataFolderPath.absolute(empty)) && output.contains("latch.sqlite"), "\(output)")
            #expect(!FileManager.default.fileExists(atPath: empty), "\(arguments) created the folder")
        }
        #expect(try await latchRun(["admin", "bootstrap", "--data-dir", empty, "--username", "owner"]).1.contains("--init"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/never.backup"))

        // --init makes the deployment; then bootstrap works without it.
        let fresh = directory.path + "/fresh"
        let (initStatus, initOutput) = try await latchRun(["admin", "bootstrap", "--init", "--data-dir", fresh, "--username", "owner", "--issuer", "http://localhost:8080"])
        #expect(initStatus == 0, "\(initOutput)")
        #expect(initOutput.contains("http://localhost:8080/console/enroll"))
        #expect(FileManager.default.fileExists(atPath: fresh + "/latch.sqlite") && Self.mode(fresh + "/master.key") == 0o600)
        let (againStatus, againOutput) = try await latchRun(["admin", "bootstrap", "--data-dir", fresh, "--username", "second", "--issuer", "http://localhost:8080"])
        #expect(againStatus == 0, "\(againOutput)")
        #expect(try await latchRun(["keys", "list", "--data-dir", fresh]).0 == 0)

        // A database without its master.key: refused, and no new key is made (it would unseal nothing).
        try FileManager.default.moveItem(atPath: fresh + "/master.key", toPath: directory.path + "/master.key.aside")
        let (keyless, keylessOutput) = try await latchRun(["admin", "bootstrap", "--data-dir", fresh, "--username", "owner"])
        #expect(keyless == 13 && keylessOutput.contains("master.key"), "\(keylessOutput)")
        #expect(try await latchRun(["keys", "rotate", "--data-dir", fresh]).0 == 13)
        #expect(try await latchRun(["admin", "backup", "--data-dir", fresh, "--out", directory.path + "/b1"]).0 == 13)
        #expect(!FileManager.default.fileExists(atPath: fresh + "/master.key"))

        // PostgreSQL: backup does not apply (before any connection is tried).
        let (postgres, postgresOutput) = try await latchRun(
            ["admin", "backup", "--data-dir", fresh, "--out", directory.path + "/b2"], ["LATCH_DATABASE_URL": "postgres://latch@127.0.0.1:1/latch"])
        #expect(postgres == 14, "\(postgresOutput)")
        #expect(postgresOutput.contains("pg_dump") && postgresOutput.contains("docs/operations.md"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/b2"))

        // Restore refuses a folder that is not empty.
        try FileManager.default.moveItem(atPath: directory.path + "/master.key.aside", toPath: fresh + "/master.key")
        let backup = directory.path + "/fresh.backup"
        #expect(try await latchRun(["admin", "backup", "--data-dir", fresh, "--out", backup]).0 == 0)
        #expect(try await latchRun(["admin", "backup", "--data-dir", fresh, "--out", backup]).0 == 2, "an existing file was overwritten")
        let (occupied, occupiedOutput) = try await latchRun(["admin", "restore", "--from", backup, "--data-dir", fresh])
        #expect(occupied == 2 && occupiedOutput.contains("not empty"), "\(occupiedOutput)")
        // A file that is not a backup.
        let (bogus, bogusOutput) = try await latchRun(["admin", "restore", "--from", fresh + "/master.key", "--data-dir", directory.path + "/r"])
        #expect(bogus == 2 && bogusOutput.contains("not a Latch backup"), "\(bogusOutput)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/r"))

        let (_, help) = try await latchRun(["admin", "--help"])
        // Help text is wrapped to the terminal's width: compare with the line breaks folded.
        let folded = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(folded.contains("On the data folder") && folded.contains("bootstrap, backup, restore") && folded.contains("Through the admin API"), "\(help)")
    }

    @Test("A schema newer than the binary: latch serve refuses it, saying so")
    func newerSchemaRefused() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let first = try Self.server(data)
        try await first.waitUntilListening()
        #expect(try await first.terminate() == 0)
        // What a newer Latch would leave: one more migration.
        let (sqlStatus, sqlOutput) = try await run(
            "/usr/bin/env", ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"INSERT INTO latch_migrations VALUES ((SELECT max(version)+1 FROM latch_migrations), '9999_from_the_future', 0)\"); c.commit()", data + "/latch.sqlite"])
        #expect(sqlStatus == 0, "\(sqlOutput)")
        let second = try Self.server(data)
        let exited = await second.process.waitForExit(timeout: 60)
        #expect(exited != nil && exited != 0)
        #expect(second.log.contains("is newer than this Latch") && second.log.contains("upgrade Latch"), "\(second.log)")
    }
}

/// The CLI's absolute spelling of a folder, for matching its messages.
enum DataFolderPath {
    static func absolute(_ path: String) -> String { (path as NSString).standardizingPath }
}

@Suite("Backup on PostgreSQL", .serialized, .enabled(if: TestPostgres.isConfigured, "LATCH_TEST_POSTGRES_URL is not set: skipped"))
struct PostgresBackupTests {
    /// pg_dump and pg_restore of the newest installed PostgreSQL.
    static func tool(_ name: String) throws -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let path = "/usr/lib/postgresql/\(version)/bin/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw ProcessFailure("\(name) is not installed (apt-get install -y postgresql)")
    }

    @Test("The documented PostgreSQL procedure: pg_dump, master.key copied, pg_restore into a new database, sessions ended by the documented SQL; a server on it verifies earlier tokens; bootstrap refuses a database no server started on unless --init")
    func pgDumpProcedure() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        // The key-encryption key as a file in the data folder (master.key), as a first start makes it.
        let original = try BackupTests.server(directory.path + "/a", extra: ["LATCH_DATABASE_URL": database])
        try await original.waitUntilListening()
        try await ReplicaTests.setUp(original.base, users: ["alice"])
        let (status, signedIn) = try await ReplicaTests.signIn(original.base, "alice")
        #expect(status == 200)
        let idToken = try #require(signedIn["id_token"]?.stringValue)
        let refresh = try #require(signedIn["refresh_token"]?.stringValue)

        // latch admin backup says it does not apply.
        let (backupStatus, backupOutput) = try await run(
            try latchExecutable().path, ["admin", "backup", "--data-dir", directory.path + "/a", "--out", directory.path + "/x"],
            environment: ["LATCH_DATABASE_URL": database])
        #expect(backupStatus == 14 && backupOutput.contains("pg_dump"), "\(backupOutput)")

        // 1. pg_dump while the server runs (one consistent snapshot), 2. the key file.
        let dump = directory.path + "/latch.dump"
        let (dumpStatus, dumpOutput) = try await run(try Self.tool("pg_dump"), ["--format=custom", "--no-owner", "--file=\(dump)", database])
        #expect(dumpStatus == 0, "\(dumpOutput)")
        let restoredFolder = directory.path + "/b"
        try FileManager.default.createDirectory(atPath: restoredFolder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let (copyStatus, copyOutput) = try await run("/usr/bin/install", ["-m", "600", directory.path + "/a/master.key", restoredFolder + "/master.key"])
        #expect(copyStatus == 0, "\(copyOutput)")
        let jwks = try await http("GET", original.base + "/.well-known/jwks.json").1
        #expect(try await original.terminate() == 0)

        // 3. pg_restore into a new database, 4. end the sessions (the documented statement).
        let target = try await TestPostgres.freshDatabase()
        let (restoreStatus, restoreOutput) = try await run(try Self.tool("pg_restore"), ["--no-owner", "--exit-on-error", "--dbname=\(target)", dump])
        #expect(restoreStatus == 0, "\(restoreOutput)")
        let endSessions = """
            UPDATE sessions SET revoked_at = extract(epoch FROM now())::bigint, purge_at = least(purge_at, extract(epoch FROM now())::bigint + 86400)
              WHERE revoked_at IS NULL AND expires_at > extract(epoch FROM now())::bigint;
            UPDATE web_sessions SET ended_at = extract(epoch FROM now())::bigint WHERE ended_at IS NULL AND expires_at > extract(epoch FROM now())::bigint;
            """
        let (sqlStatus, sqlOutput) = try await run("/usr/bin/env", ["psql", target, "-v", "ON_ERROR_STOP=1", "-q", "-c", endSessions])
        #expect(sqlStatus == 0, "\(sqlOutput)")

        let restored = try BackupTests.server(restoredFolder, extra: ["LATCH_DATABASE_URL": target])
        try await restored.waitUntilListening()
        #expect(try await http("GET", restored.base + "/.well-known/jwks.json").1 == jwks)
        #expect(try await BackupTests.verifies(idToken, at: restored.base))
        let refused = try await BackupTests.refresh(restored.base, refresh)
        #expect(refused.0 == 400 && refused.1["error"] == "invalid_grant", "\(refused)")
        #expect(try await ReplicaTests.signIn(restored.base, "alice").0 == 200)
        #expect(try await restored.terminate() == 0)

        // bootstrap on a database no server has started on (the folder's master.key is there): refused without --init.
        let empty = try await TestPostgres.freshDatabase()
        let bootstrap = ["admin", "bootstrap", "--data-dir", restoredFolder, "--username", "owner", "--issuer", "http://localhost:8080"]
        let (uninitialized, refusedOutput) = try await run(try latchExecutable().path, bootstrap, environment: ["LATCH_DATABASE_URL": empty])
        #expect(uninitialized == 13 && refusedOutput.contains("no `latch serve` has started on"), "\(refusedOutput)")
        let (initialized, initializedOutput) = try await run(try latchExecutable().path, bootstrap + ["--init"], environment: ["LATCH_DATABASE_URL": empty])
        #expect(initialized == 0 && initializedOutput.contains("/console/enroll?ticket="), "\(initializedOutput)")
    }
}
