import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// The audit log: recorded with its unit of work, sealed into a chain in commit order, purged.
    static let auditChecks: [Check] = [
        Check(name: "audit log: recorded with their unit of work, dropped with a refused one, sealed into a chain without gaps; filters") {
            store, replica in
            @Sendable func event(_ id: String, _ kind: SecurityEvent.Kind = .userDeleted, user: String? = "u-alice", at: Int64 = 5, actor: String = "admin:at_1")
                -> SecurityEvent
            {
                SecurityEvent(
                    id: id, at: at, kind: kind, actor: actor, userID: user, clientID: "app", detail: "why", address: "127.0.0.1", userAgent: "ua",
                    requestID: "r1")
            }
            try await store.write { $0.record(event("e1")) }
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.record(event("e2"))
                    transaction.deleteUser(id: "nobody", ifMissing: Refusal.missing)
                }
            }
            try await replica.record(event("e3", .signInFailed, user: nil, at: 7, actor: "anonymous"))
            try await store.write { transaction in
                transaction.record(event("e4", .admin("clients", "create"), user: nil, at: 9))
                transaction.record(event("e5", .admin("clients", "delete"), user: "u-bob", at: 11))
            }
            // Written, numbered in order (PostgreSQL's sequence may skip the rolled-back unit's number), not sealed yet.
            let written = try await replica.auditRecords(matching: AuditQuery())
            #expect(written.map(\.event.id) == ["e5", "e4", "e3", "e1"])
            #expect(zip(written, written.dropFirst()).allSatisfy { $0.seq > $1.seq })
            #expect(written.last?.event == event("e1"))
            #expect(written.allSatisfy { $0.position == nil && $0.mac == nil && $0.entryMAC?.count == 32 })
            #expect(try await store.unsealedAudit(after: 0, limit: 10).map(\.event.id) == ["e1", "e3", "e4", "e5"])
            #expect(try await store.auditChain(after: 0, limit: 10).isEmpty)
            let chain = AuditChain()
            let before = try await chain.verify(replica)
            #expect(before.verified && before.checked == 0 && before.unsealed == 4 && before.oldestUnsealedAt == 5)
            // Sealed: positions 1…4 in the order the units committed, each with its chain MAC.
            #expect(try await sealAll(replica) == 4)
            #expect(try await store.sealAudit() ?? 0 == 0)
            let all = try await replica.auditRecords(matching: AuditQuery())
            #expect(all.map(\.position) == [4, 3, 2, 1])
            #expect(all.map(\.seq) == written.map(\.seq))
            #expect(all.allSatisfy { $0.mac?.count == 32 })
            func ids(_ query: AuditQuery) async throws -> [String] { try await store.auditRecords(matching: query).map(\.event.id) }
            #expect(try await ids(AuditQuery(kinds: ["signin.failed"])) == ["e3"])
            #expect(try await ids(AuditQuery(kinds: ["admin."])) == ["e5", "e4"])
            #expect(try await ids(AuditQuery(kinds: ["admin.clients.create", "user.deleted"])) == ["e4", "e1"])
            #expect(try await ids(AuditQuery(kinds: ["admin"])) == [])
            #expect(try await ids(AuditQuery(actor: "anonymous")) == ["e3"])
            #expect(try await ids(AuditQuery(subject: "u-alice")) == ["e1"])
            #expect(try await ids(AuditQuery(since: 7, until: 11)) == ["e4", "e3"])
            #expect(try await ids(AuditQuery(before: all[1].seq, limit: 1)) == ["e3"])
            #expect(try await store.auditChain(after: 1, limit: 2).map(\.position) == [2, 3])
            #expect(try await store.unsealedAudit(after: 0, limit: 10).isEmpty)
            let anchor = try await store.auditAnchor()
            #expect(anchor.anchorSeq == 0 && anchor.headSeq == 4 && anchor.headMAC == all.first?.mac)
            #expect(try await chain.verify(store, pageSize: 3).verified)
            let after = try await chain.verify(store)
            #expect(after.checked == 4 && after.unsealed == 0 && after.oldestUnsealedAt == nil)
            // Another key: nothing verifies.
            let other = AuditChain()
            other.setKey([UInt8](repeating: 9, count: 32))
            #expect(try await other.verify(replica).brokenAt == 1)
        },
        Check(name: "audit log: a record without its entry MAC is sealed as forged and named by verification") { store, replica in
            // Written under one key, sealed under another: to the sealer, the record is not the deployment's (as a row
            // inserted by someone who can write the database but holds no key).
            try await replica.record(SecurityEvent(id: "e1", at: 5, kind: .signInSucceeded, actor: "user", userID: "u-alice"))
            let other = [UInt8](repeating: 7, count: 32)
            let forged = AuditChain()
            forged.setKey(other)
            #expect(try await AuditChain().verify(store).unsealed == 1)
            let refused = try await forged.verify(store)
            #expect(!refused.verified && refused.problem?.contains("unsealed record number") == true)
            store.auditChain.setKey(other)
            defer { store.auditChain.setKey([UInt8](repeating: 0, count: 32)) }
            #expect(try await sealAll(store) == 1)
            let sealed = try await forged.verify(replica)
            #expect(sealed.brokenAt == 1 && sealed.problem?.contains("not written by this deployment") == true)
        },
        Check(name: "audit log: units recording at once on two replicas are sealed once each; purging moves the anchor") { store, replica in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        try await pick(index, store, replica).write { transaction in
                            transaction.record(SecurityEvent(id: "r\(index)", at: Int64(index), kind: .signInSucceeded, actor: "user"))
                            if index.isMultiple(of: 4) {
                                transaction.record(SecurityEvent(id: "s\(index)", at: Int64(index), kind: .loggedOut, actor: "user"))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await sealAll(store, batch: 6) == 20)
            let chain = AuditChain()
            let verified = try await chain.verify(replica, pageSize: 7)
            #expect(verified.verified && verified.checked == 20 && verified.lastSeq == 20)
            let records = try await store.auditChain(after: 0, limit: 100)
            #expect(records.map(\.position) == Array(1...20).map { Int64($0) })
            #expect(Set(records.map(\.event.id)).count == 20)
            // Purging the records before t=8 (a prefix of the chain up to the last one before it) keeps the rest
            // verifiable; the purge's own record is written first and sealed after.
            let cut = records.last { $0.event.at < 8 }!.position!
            let purged = try await replica.write { transaction in
                transaction.record(SecurityEvent(id: "p1", at: 30, kind: .auditPurged, actor: "system"))
                return transaction.purgeAudit(recordedBefore: 8)
            }.value
            #expect(purged == Int(cut))
            #expect(try await sealAll(replica) == 1)
            let anchor = try await store.auditAnchor()
            #expect(anchor.anchorSeq == cut && anchor.headSeq == 21)
            let after = try await chain.verify(store)
            #expect(after.verified && after.anchorSeq == cut && after.checked == 21 - Int(cut))
            // Nothing older: a second purge deletes nothing and keeps the anchor; new records number past the purged.
            #expect(try await store.write { $0.purgeAudit(recordedBefore: 0) }.value == 0)
            #expect(try await store.auditAnchor().anchorSeq == cut)
            try await store.record(SecurityEvent(id: "n1", at: 40, kind: .signInSucceeded, actor: "user"))
            let newest = try await store.auditRecords(matching: AuditQuery(limit: 2))
            #expect(newest.map(\.event.id) == ["n1", "p1"] && newest[0].seq > newest[1].seq)
        },
        Check(name: "audit log: sealed in commit order while writers on two replicas race sealers on both; every record exactly once") {
            store, replica in
            // Each writer records its events one unit after another and notes when each unit began and returned; both
            // replicas seal in small batches all along. A unit that returned before another began must come first in
            // the chain, and every unit's records are sealed once.
            final class Timeline: Sendable {
                let units = Locked<[(id: String, began: ContinuousClock.Instant, returned: ContinuousClock.Instant)]>([])
                let writing = Locked(0)
            }
            let timeline = Timeline()
            let writers = 8
            let unitsPerWriter = 15
            timeline.writing.withLock { $0 = writers }
            let deadline = ContinuousClock.now + .seconds(60)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        defer { timeline.writing.withLock { $0 -= 1 } }
                        for unit in 0..<unitsPerWriter {
                            let id = "w\(writer)-\(unit)"
                            let began = ContinuousClock.now
                            try await pick(writer + unit, store, replica).write { transaction in
                                transaction.record(SecurityEvent(id: id, at: Int64(unit), kind: .signInSucceeded, actor: "user"))
                                if unit.isMultiple(of: 3) {
                                    transaction.record(SecurityEvent(id: id + "b", at: Int64(unit), kind: .loggedOut, actor: "user"))
                                }
                            }
                            let returned = ContinuousClock.now
                            timeline.units.withLock { $0.append((id, began, returned)) }
                        }
                    }
                }
                for (index, sealer) in [store, replica].enumerated() {
                    group.addTask {
                        while timeline.writing.withLock({ $0 }) > 0, ContinuousClock.now < deadline {
                            _ = try await sealer.sealAudit(batch: 3 + index * 2, maximumPasses: 2)
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
                try await group.waitForAll()
            }
            _ = try await sealAll(store, batch: 50)
            let total = writers * unitsPerWriter + writers * ((unitsPerWriter + 2) / 3)
            let verified = try await AuditChain().verify(replica)
            #expect(verified.verified && verified.checked == total && verified.unsealed == 0)
            let sealed = try await store.auditChain(after: 0, limit: total + 10)
            #expect(sealed.count == total && Set(sealed.map(\.event.id)).count == total)
            #expect(sealed.map(\.position) == (1...total).map { Int64($0) })
            var position: [String: Int64] = [:]
            for record in sealed { position[record.event.id] = record.position }
            // A unit's two records sit side by side.
            for record in sealed where record.event.id.hasSuffix("b") {
                #expect(position[String(record.event.id.dropLast())].map { $0 + 1 } == record.position)
            }
            let units = timeline.units.withLock { $0 }
            var outOfOrder: [String] = []
            for first in units {
                for second in units where first.returned < second.began {
                    if let a = position[first.id], let b = position[second.id], a > b { outOfOrder.append("\(first.id) before \(second.id)") }
                }
            }
            #expect(outOfOrder.isEmpty, "committed before it began, sealed after: \(outOfOrder.prefix(5))")
        },
    ]
}
