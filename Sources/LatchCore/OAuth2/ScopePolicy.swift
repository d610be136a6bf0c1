import LatchModel

/// Which scopes a sign-in may be granted (RFC 6749 §3.3).
public struct ScopePolicy: Sendable {
    /// Scopes a client may ask for; `openid` is always granted.
    public let allowed: Set<String>

    public init(allowed: Set<String>) { self.allowed = allowed }

    /// `openid` plus the requested scopes in request order, without repeats; an unknown one is `invalid_scope`.
    public func grant(_ requested: String?) throws(LatchError) -> String {
        var scopes = ["openid"]
        for scope in (requested ?? "").split(separator: " ").map(String.init) where scope != "openid" {
            guard allowed.contains(scope) else { throw LatchError(.invalidScope, "unknown scope") }
            if !scopes.contains(scope) { scopes.append(scope) }
        }
        return scopes.joined(separator: " ")
    }
}
