import LatchModel

/// Which roles may call each admin route: one table, default deny.
///
/// A route is named by its method and its template as the router knows it (`DELETE /admin/v1/users/{id}`); `HEAD`
/// is checked as `GET`. A route missing from the table is refused for every role — a test walks the router's
/// routes so that none is forgotten, and docs/operations.md prints this table (checked by a test too).
///
/// The table decides per route; rules that depend on the target are the engines' (an `admin` creates tokens up
/// to `admin` only, `support` lists and revokes its own account's tokens only).
public enum AdminPolicy {
    /// Every role.
    static let everyone: Set<AdminRole> = Set(AdminRole.allCases)
    /// Reading configuration and state: not `support`, who reads users only.
    static let readers: Set<AdminRole> = [.owner, .admin, .auditor]
    /// Changing configuration and state.
    static let writers: Set<AdminRole> = [.owner, .admin]
    /// Revoking a user's sessions, and an account's own tokens.
    static let support: Set<AdminRole> = [.owner, .admin, .support]
    /// Managing admin accounts.
    static let owners: Set<AdminRole> = [.owner]

    /// `"METHOD /path/template"` → the roles allowed.
    public static let table: [String: Set<AdminRole>] = [
        // Admin accounts.
        "POST /admin/v1/admins": owners,
        "GET /admin/v1/admins": readers,
        "DELETE /admin/v1/admins/{id}": owners,
        "POST /admin/v1/admins/{id}/enrollment": owners,
        // Admin tokens: support and above manage their own; the engine limits whose and which role.
        "POST /admin/v1/tokens": support,
        "GET /admin/v1/tokens": everyone,
        "DELETE /admin/v1/tokens/{id}": support,
        // Users, their sessions and authenticators.
        "GET /admin/v1/users": everyone,
        "GET /admin/v1/users/{id}": everyone,
        "DELETE /admin/v1/users/{id}": writers,
        "POST /admin/v1/users/{id}/sign-out": support,
        "GET /admin/v1/users/{id}/sessions": everyone,
        "DELETE /admin/v1/users/{id}/sessions/{sessionId}": support,
        "GET /admin/v1/users/{id}/devices": everyone,
        "GET /admin/v1/users/{id}/authenticators": everyone,
        "DELETE /admin/v1/users/{id}/authenticators": writers,
        "DELETE /admin/v1/users/{id}/authenticators/{authenticator}": writers,
        "POST /admin/v1/users/{id}/authenticators/{authenticator}/unlock": writers,
        "POST /admin/v1/users/{id}/enrollments": writers,
        // Issuers and test registration keys.
        "POST /admin/v1/issuers": writers,
        "GET /admin/v1/issuers": readers,
        "DELETE /admin/v1/issuers/{name}": writers,
        "POST /admin/v1/test-keys": writers,
        "GET /admin/v1/test-keys": readers,
        "DELETE /admin/v1/test-keys/{keyId}": writers,
        // Clients and their evidence.
        "POST /admin/v1/clients": writers,
        "GET /admin/v1/clients": readers,
        "PATCH /admin/v1/clients/{id}": writers,
        "DELETE /admin/v1/clients/{id}": writers,
        "POST /admin/v1/clients/{id}/signing-certificates": writers,
        "GET /admin/v1/clients/{id}/signing-certificates": readers,
        "DELETE /admin/v1/clients/{id}/signing-certificates/{sha256}": writers,
        "GET /admin/v1/client-config": readers,
        // Signing keys.
        "POST /admin/v1/keys/rotate": writers,
        // Upstream identity providers.
        "POST /admin/v1/upstream-idps": writers,
        "GET /admin/v1/upstream-idps": readers,
        "GET /admin/v1/upstream-idps/{id}": readers,
        "DELETE /admin/v1/upstream-idps/{id}": writers,
        // Issuer login.
        "POST /admin/v1/login-issuers": writers,
        "GET /admin/v1/login-issuers": readers,
        "DELETE /admin/v1/login-issuers/{issuerId}": writers,
        "POST /admin/v1/login-issuers/{issuerId}/consumers/{consumerId}/logout-all": writers,
        "POST /admin/v1/resource-servers": writers,
        "GET /admin/v1/resource-servers": readers,
        "DELETE /admin/v1/resource-servers/{clientId}": writers,
        // Custom registration providers.
        "POST /admin/v1/custom-providers": writers,
        "GET /admin/v1/custom-providers": readers,
        "GET /admin/v1/custom-providers/{id}": readers,
        "PATCH /admin/v1/custom-providers/{id}": writers,
        "DELETE /admin/v1/custom-providers/{id}": writers,
        "GET /admin/v1/custom-providers/{id}/transactions": readers,
        // The audit log (its routes come with it).
        "GET /admin/v1/audit": readers,
        "GET /admin/v1/audit/export": readers,
        "GET /admin/v1/audit/verify": readers,
        // Prometheus scrapes with any admin token.
        "GET /metrics": everyone,
    ]

    /// The roles that may call `method` on `template`; empty for a route the table lacks (nobody may).
    public static func allowedRoles(method: String, template: String) -> Set<AdminRole> {
        let method = method.uppercased() == "HEAD" ? "GET" : method.uppercased()
        return table["\(method) \(template)"] ?? []
    }

    /// Refuses `role` on `method` `template` with `forbidden`, naming the roles that may.
    public static func check(_ role: AdminRole, method: String, template: String) throws(LatchError) {
        let allowed = allowedRoles(method: method, template: template)
        guard !allowed.contains(role) else { return }
        guard !allowed.isEmpty else { throw LatchError(.forbidden, "no admin role may call this route") }
        throw LatchError(.forbidden, "this route needs the role \(describe(allowed)); this token's role is \(role.rawValue)")
    }

    /// `owner, admin or support`, highest first.
    public static func describe(_ roles: Set<AdminRole>) -> String {
        let names = roles.sorted(by: >).map(\.rawValue)
        guard names.count > 1 else { return names.first ?? "none" }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// Refuses `caller` to grant `role` above its own (escalation).
    static func checkGrant(_ role: AdminRole, by caller: AdminCaller) throws(LatchError) {
        guard role <= caller.role else {
            throw LatchError(
                .forbidden, "a token of role \(caller.role.rawValue) cannot grant the role \(role.rawValue): that needs the role \(role.rawValue) or above")
        }
    }
}
