/// A secret value (an admin token, a key, a URL with a password) that never shows itself: its description,
/// debug description and mirror are `<redacted>`, so a logger, ServiceLifecycle or `dump` printing a structure
/// holding it cannot leak it. Read the value explicitly with ``value``.
public struct Redacted<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var value: Value

    public init(_ value: Value) { self.value = value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Redacted: Equatable where Value: Equatable {}
