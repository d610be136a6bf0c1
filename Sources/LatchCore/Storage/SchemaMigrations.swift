/// The names of Latch's schema migrations, in order. Every store applies migrations with exactly these names
/// in this order (each in its own SQL dialect), so a deployment can move between backends and a newer schema
/// is recognised by any of them.
public enum SchemaMigrations {
    public static let names = ["0001_core", "0002_events", "0003_revoked_admin_tokens", "0004_stateless_sign_in_nonces", "0005_usernames_per_source", "0006_attestation", "0007_authenticators",
        "0008_authenticator_failures", "0009_out_of_band", "0010_issuer_login", "0011_custom_registration", "0012_dpop", "0013_federation", "0014_audit_log",
        "0015_admin_accounts", "0016_admin_passkeys", "0017_audit_sealer", "0018_pin_binding",
    ]
}

/// The schema cannot be brought up to date: it is newer than this binary, or its applied migrations differ from
/// ``SchemaMigrations/names``.
public struct MigrationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
