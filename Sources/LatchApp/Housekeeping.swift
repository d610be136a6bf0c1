import LatchCore
import LatchServer
import Logging
import ServiceLifecycle

/// Background upkeep: purges expired nonces, `jti`s and dead sessions in bounded batches, drops retired
/// signing keys nobody can need, and reloads keys, clients and admin tokens so changes made elsewhere are
/// picked up.
struct Housekeeping: Service, CustomStringConvertible {
    /// What ServiceLifecycle logs: the name alone, never the secrets held.
    var description: String { "Housekeeping" }

    let deployment: LatchDeployment
    let interval: Duration
    let logger: Logger

    /// Rows deleted per statement, and statements per round: bounded work, whatever the backlog.
    static let batch = 1000
    static let maximumBatchesPerRound = 50

    /// Keys and clients are re-read at least this often, so a change made on another replica (a rotated
    /// signing key, a new client) is published here within seconds.
    static let reloadInterval: Duration = .seconds(10)

    func run() async throws {
        // Graceful shutdown cancels the sleep; a round in progress finishes first.
        try? await cancelWhenGracefulShutdown {
            let tick = min(interval, Self.reloadInterval)
            var sincePurge: Duration = .zero
            while !Task.isCancelled {
                try await Task.sleep(for: tick)
                sincePurge += tick
                if sincePurge >= interval {
                    sincePurge = .zero
                    await runOnce()
                } else {
                    await reload()
                }
            }
        }
    }

    func reload() async {
        do {
            try await deployment.services.keys.reload()
            try await deployment.services.clients.reload()
            try await deployment.services.adminTokenGate.reload()
        } catch {
            logger.warning("reload failed", metadata: ["error": "\(error)"])
        }
    }

    /// One round: purge, drop old keys, reload; failures are logged and retried next round.
    func runOnce() async {
        do {
            let now = deployment.clock.seconds()
            var purged = 0
            for _ in 0..<Self.maximumBatchesPerRound {
                let count = try await deployment.store.purgeExpired(now: now, limit: Self.batch)
                purged += count
                if count < Self.batch { break }
            }
            let configuration = deployment.configuration
            let keyCutoff = now - configuration.tokenSettings.longestTokenLifetime - configuration.assertions.clockSkew
            let keysDeleted = try await deployment.store.deleteSigningKeys(retiredBefore: keyCutoff)
            purged += try await deployment.services.audit.purgeExpired()
            await reload()
            if purged > 0 || keysDeleted > 0 {
                logger.info("housekeeping", metadata: ["purged": "\(purged)", "signingKeysDeleted": "\(keysDeleted)"])
            }
        } catch {
            logger.warning("housekeeping failed", metadata: ["error": "\(error)"])
        }
    }
}
