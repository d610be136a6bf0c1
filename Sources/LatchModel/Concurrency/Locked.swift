#if os(Linux) || os(Android) || os(Windows) || os(WASI)
import Synchronization
#else
import Foundation
#endif

/// A value guarded by a lock: `withLock` gives one caller at a time exclusive access.
///
/// Latch's modules share mutable state through this type rather than `Synchronization.Mutex` because `Mutex` exists
/// only from iOS 18 / macOS 15 and the SDK ships to iOS 16 and macOS 13. Where the toolchain's stdlib always has
/// `Mutex` (Linux, the server's platform), `Locked` *is* a `Mutex`, so the server pays nothing for the portability;
/// on Apple platforms it is an `NSLock` (a pthread mutex).
///
/// The closure must not call `withLock` on the same value again (the lock is not recursive) and should not suspend:
/// `withLock` is synchronous on purpose.
public final class Locked<Value>: @unchecked Sendable {
    // `@unchecked`: every access to the value goes through `withLock`, which holds the lock for the whole access
    // (on Linux the stored `Mutex` is `Sendable` itself). The value leaves the lock only as `sending`, like `Mutex`.
    #if os(Linux) || os(Android) || os(Windows) || os(WASI)
    @usableFromInline let mutex: Mutex<Value>

    /// A lock guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) { mutex = Mutex(initialValue) }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
    #else
    private let lock = NSLock()
    nonisolated(unsafe) private var value: Value

    /// A lock guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) { value = initialValue }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
    #endif
}
