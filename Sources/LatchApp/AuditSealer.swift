import LatchCore
import Logging
import ServiceLifecycle

/// Links the audit records units of work wrote into the chain, every `interval` (a second by default, so a record
/// is sealed within about two seconds of its commit). Every replica runs one; on PostgreSQL only the replica holding
/// the sealing lock seals in a pass, the others find it taken and try again next time — so when that replica dies,
/// another takes over within a pass. A pass that fails is logged and retried; on shutdown a last pass seals what
/// this replica wrote. On SQLite the writer seals records as it inserts them (`SQLiteAuditHead`): a pass there finds
/// only rows written otherwise (by another process or an older binary), usually none.
struct AuditSealer: Service, CustomStringConvertible {
    var description: String { "AuditSealer" }

    let audit: AuditLog
    let interval: Duration
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await pass()
            }
        }
        await pass()
    }

    func pass() async {
        do {
            try await audit.sealPending()
        } catch {
            logger.warning("sealing the audit log failed; retrying", metadata: ["error": "\(error)"])
        }
    }
}
