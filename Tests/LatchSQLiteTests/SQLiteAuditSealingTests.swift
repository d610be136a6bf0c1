import Foundation
import LatchCore
import LatchModel
@testable import LatchSQLite
import LatchTesting
import Testing

/// SQLite seals the audit records a group commit writes as it inserts them (`SQLiteAuditHead`); the sealer links
/// only rows written otherwise.
@Suite("SQLite audit: sealed at insert")
struct SQLiteAuditSealingTests {
    struct Refused: Error {}

    func event(_ id: String, at: Int64 = 5) -> SecurityEvent {
        SecurityEvent(id: id, at: at, kind: .signInSucceeded, actor: "user", userID: "u-alice", detail: "amr=pop", address: "127.0.0.1")
    }

    @Test("A unit's records are sealed when write returns, in order and without gaps; a refused unit leaves none and no hole")
    func sealedAtInsert() async throws {
        try await withStores(sealsAtCommit: [true]) { try await checkSealedAtInsert($0[0]) }
    }

    func checkSealedAtInsert(_ store: SQLiteStore) async throws {
        try await store.record(event("e1"))
        await #expect(throws: Refused.self) {
            try await store.write { transaction in
                transaction.record(event("e2"))
                transaction.deleteUser(id: "nobody", ifMissing: Refused())
            }
        }
        try await store.write { transaction in
            transaction.record(event("e3"))
            transaction.record(event("e4"))
        }
        let records = try await store.auditChain(after: 0, limit: 10)
        #expect(records.map(\.event.id) == ["e1", "e3", "e4"])
        #expect(records.map(\.position) == [1, 2, 3])
        #expect(records.allSatisfy { $0.mac?.count == 32 && $0.entryMAC?.count == 32 })
        #expect(try await store.unsealedAudit(after: 0, limit: 10).isEmpty)
        #expect(try await store.sealAudit() ?? 0 == 0, "nothing left for the sealer")
        let anchor = try await store.auditAnchor()
        #expect(anchor.headSeq == 3 && anchor.headMAC == records.last?.mac)
        let verified = try await AuditChain().verify(store)
        #expect(verified.verified && verified.checked == 3 && verified.unsealed == 0)
        // Under another key nothing verifies: the chain MACs were made with the store's key.
        let other = AuditChain()
        other.setKey([UInt8](repeating: 9, count: 32))
        #expect(try await other.verify(store).brokenAt == records.first?.seq)
    }

    @Test("Rows another writer left unsealed make batches write plain rows until the sealer linked them all, in order; then sealing at insert resumes")
    func plainRowsFirst() async throws {
        // The second: an older binary, or another process that leaves sealing to the sealer.
        try await withStores(sealsAtCommit: [true, false]) { try await checkPlainRowsFirst($0[0], older: $0[1]) }
    }

    func checkPlainRowsFirst(_ store: SQLiteStore, older: SQLiteStore) async throws {
        try await store.record(event("a1"))
        try await older.record(event("b1"))
        try await store.record(event("a2"))
        #expect(try await store.unsealedAudit(after: 0, limit: 10).map(\.event.id) == ["b1", "a2"])
        #expect(try await StoreConformance.sealAll(store) == 2)
        try await store.record(event("a3"))
        let records = try await store.auditChain(after: 0, limit: 10)
        #expect(records.map(\.event.id) == ["a1", "b1", "a2", "a3"] && records.map(\.position) == [1, 2, 3, 4])
        #expect(try await store.unsealedAudit(after: 0, limit: 10).isEmpty)
        #expect(try await AuditChain().verify(older).verified)
        // A row inserted by someone without the key (no entry MAC): written plain, sealed as forged, named.
        _ = try await store.job { db in
            try db.run("INSERT INTO audit_log (id, at, kind, actor) VALUES ('x1', 6, 'signin.succeeded', 'user')")
        }
        try await store.record(event("a4"))
        #expect(try await store.unsealedAudit(after: 0, limit: 10).map(\.event.id) == ["x1", "a4"])
        #expect(try await StoreConformance.sealAll(store) == 2)
        let checked = try await AuditChain().verify(store)
        #expect(checked.brokenAt == records.last.map { $0.seq + 1 } && checked.problem?.contains("not written by this deployment") == true, "\(checked)")
    }

    @Test("Writers on two connections race sealers on both, sealing at insert on one or both: every record exactly once, in commit order",
          arguments: [true, false])
    func race(replicaSealsAtCommit: Bool) async throws {
        let check = try #require(StoreConformance.checks.first { $0.name.hasPrefix("audit log: sealed in commit order") })
        try await withStores(sealsAtCommit: [true, replicaSealsAtCommit]) { try await check.run($0[0], $0[1]) }
    }
}
