#if os(Linux) || os(Android) || os(Windows) || os(WASI)
import Synchronization
#else
import Foundation
#endif

/// A value guarded by a lock: `withLock` gives one caller at a time exclusive access.
///
/// Latch's modules share mutable state through this type rather than `Synchronization.Mutex` because `Mutex` exists
/// only from iOS 18 / macOS 15 and the SDK ships to iOS 16 and macOS 13. Where the toolchain's stdlib always has
/// `Mutex` (Linux, the server's platform), `Locked` *is* a `Mutex` stored inline — no allocation, no reference count
/// touched per access, so the server pays nothing for the portability (a class around the `Mutex` cost the busiest
/// endpoints measurably: every access retained and released one shared object); on Apple platforms it holds an
/// `NSLock` (a pthread mutex) and the value in one allocation.
///
/// Like `Mutex` it is non-copyable: store it in a `let` of a class, an actor or a non-copyable type. The closure must
/// not call `withLock` on the same value again (the lock is not recursive) and should not suspend.
#if os(Linux) || os(Android) || os(Windows) || os(WASI)
public struct Locked<Value>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>

    /// A lock guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) { mutex = Mutex(initialValue) }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    @inlinable
    public borrowing func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
}
#else
public struct Locked<Value>: ~Copyable, @unchecked Sendable {
    // `@unchecked`: the value is reached only through `withLock`, which holds the lock for the whole access; it leaves
    // the lock only as `sending`, as with `Mutex`.
    private let storage: LockedStorage<Value>

    /// A lock guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) { storage = LockedStorage(initialValue) }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    public borrowing func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try storage.withLock(body)
    }
}

/// The lock and the value of a ``Locked`` on Apple platforms.
final class LockedStorage<Value>: @unchecked Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value: Value

    init(_ initialValue: consuming sending Value) { value = initialValue }

    func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
#endif
