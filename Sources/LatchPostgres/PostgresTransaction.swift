import LatchCore
import PostgresNIO
import Tracing

/// The writes of one unit of work, recorded while its body runs and sent afterwards as one transaction
/// (``PostgresStore/write(_:)``): PostgreSQL is reached asynchronously, and the body is synchronous and
/// write-only, so nothing is lost by sending later — and the transaction holds its locks only while its
/// statements run, never while Swift code decides.
final class PostgresTransaction {
    /// One write: its statements, run in order on the unit's connection; it answers a refusal, or nil.
    struct Step: Sendable {
        /// How many statements it sends (a unit of one single statement needs no BEGIN / COMMIT).
        let statements: Int
        let run: @Sendable (PostgresConnection) async throws -> (any Error & Sendable)?
    }

    private(set) var steps: [Step] = []
    /// Gives the audit records the unit writes their entry MAC, and seals.
    let auditChain: AuditChain

    init(auditChain: AuditChain) {
        self.auditChain = auditChain
    }

    func add(statements: Int = 1, _ run: @escaping @Sendable (PostgresConnection) async throws -> (any Error & Sendable)?) {
        steps.append(Step(statements: statements, run: run))
    }

    /// A statement built when it runs (binding some values, such as `Data`, can throw).
    typealias Statement = @Sendable () throws -> PostgresQuery

    /// Runs a statement whose outcome does not matter.
    func execute(_ query: @autoclosure @escaping Statement) {
        add { connection in
            try await connection.run(query())
            return nil
        }
    }

    /// Runs two statements whose outcomes do not matter.
    func execute(_ first: @autoclosure @escaping Statement, _ second: @autoclosure @escaping Statement) {
        add(statements: 2) { connection in
            try await connection.run(first())
            try await connection.run(second())
            return nil
        }
    }

    /// Runs a statement that returns a row for what it changed (`RETURNING 1`); refuses when it returned none.
    func changeOne(_ query: @autoclosure @escaping Statement, orRefuse refusal: any Error & Sendable) {
        add { connection in try await connection.run(query()).first(Int.self) == nil ? refusal : nil }
    }

    /// Runs a statement that returns a row per row changed (`RETURNING 1`) and reports how many.
    func counting(_ query: @autoclosure @escaping Statement) -> WriteResult<Int> {
        let result = WriteResult(0)
        add { connection in
            result.set(try await connection.run(query()).all(Int.self).count)
            return nil
        }
        return result
    }

    /// Refuses when a query finds a row (`ifFound: true`) or finds none (`false`).
    func check(_ query: @autoclosure @escaping Statement, ifFound: Bool, refuse refusal: any Error & Sendable) {
        add { connection in (try await connection.run(query()).first(Int.self) != nil) == ifFound ? refusal : nil }
    }
}

/// A refused unit of work: rolls the transaction back and reaches the caller as the refusal.
struct RefusedUnit: TransactionRollback {
    let refusal: any Error & Sendable
}

extension PostgresStore: UnitOfWork {
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) -> T) async throws -> T {
        try await LatchTracing.span("store.write", ofKind: .client) { _ in try await unit(body) }
    }

    private func unit<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) -> T) async throws -> T {
        let transaction = PostgresTransaction(auditChain: auditChain)
        let result = body(transaction)
        let steps = transaction.steps
        guard !steps.isEmpty else { return result }
        let started = ContinuousClock.now
        let observer = observers.observer
        do {
            if steps.count == 1, steps[0].statements == 1 {
                // One statement is atomic on its own: no BEGIN / COMMIT round trips.
                try await withConnection("write") { connection in
                    if let refusal = try await steps[0].run(connection) { throw RefusedUnit(refusal: refusal) }
                }
            } else {
                try await self.transaction("write") { connection in
                    for step in steps {
                        if let refusal = try await step.run(connection) { throw RefusedUnit(refusal: refusal) }
                    }
                }
            }
        } catch let refused as RefusedUnit {
            throw refused.refusal
        } catch let error as StoreUnavailableError {
            observer?.failed("write")
            throw error
        }
        if let observer {
            let elapsed = ContinuousClock.now - started
            observer.committed(units: 1, nanoseconds: elapsed.nanoseconds)
        }
        return result
    }
}
