import Foundation
import LatchCore
import LatchModel

/// The audit log: recorded, sealed into the chain, purged.
extension InMemoryStore.Transaction {
    func record(_ event: SecurityEvent) {
        apply { [chain] state in
            let seq = state.auditNextSeq
            state.auditNextSeq += 1
            state.audit.append(AuditRecord(seq: seq, event: event, entryMAC: chain.entryMAC(body: AuditChain.body(of: event))))
            return nil
        }
    }

    func sealAudit(limit: Int) -> WriteResult<Int?> {
        let result = WriteResult<Int?>(0)
        apply { [chain] state in
            // Units run one at a time under the store's lock: what is in the state has committed, in the order of
            // the numbers.
            let pending = state.audit.indices.filter { state.audit[$0].position == nil }.prefix(limit)
            let sealed = chain.seal(pending.map { state.audit[$0] }, after: (state.auditAnchor.headSeq, state.auditAnchor.headMAC))
            for (index, seal) in zip(pending, sealed.seals) {
                state.audit[index].position = seal.position
                state.audit[index].mac = seal.mac
            }
            (state.auditAnchor.headSeq, state.auditAnchor.headMAC) = sealed.head
            result.set(pending.count)
            return nil
        }
        return result
    }

    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            guard let last = state.audit.last(where: { $0.position != nil && $0.event.at < at }), let cut = last.position else { return nil }
            let purged = { (record: AuditRecord) in record.position.map { $0 <= cut } ?? false }
            result.set(state.audit.count(where: purged))
            state.audit.removeAll(where: purged)
            if let mac = last.mac, state.auditAnchor.anchorSeq < cut {
                state.auditAnchor.anchorSeq = cut
                state.auditAnchor.anchorMAC = mac
            }
            return nil
        }
        return result
    }
}
