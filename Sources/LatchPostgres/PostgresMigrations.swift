import LatchCore
import Logging
import PostgresNIO

/// Latch's schema in PostgreSQL: the same migration names, in the same order, as the SQLite store.
enum PostgresMigrations {
    static let all: [(name: String, sql: [String])] = [
        (
            "0001_core",
            [
                "CREATE TABLE clients (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at BIGINT NOT NULL)",
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, issuer TEXT, subject TEXT,
                    claims TEXT NOT NULL DEFAULT '{}', created_at BIGINT NOT NULL)
                """,
                "CREATE UNIQUE INDEX users_federated ON users (issuer, subject)",
                """
                CREATE TABLE device_keys (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, key_id TEXT NOT NULL, algorithm TEXT NOT NULL,
                    public_key BYTEA NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (user_id, key_id))
                """,
                """
                CREATE TABLE registrations (
                    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    proof_hash BYTEA NOT NULL, created_at BIGINT NOT NULL)
                """,
                "CREATE INDEX registrations_user ON registrations (user_id)",
                """
                CREATE TABLE nonces (
                    nonce TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, expires_at BIGINT NOT NULL)
                """,
                "CREATE INDEX nonces_user ON nonces (user_id, expires_at)",
                "CREATE INDEX nonces_expiry ON nonces (expires_at)",
                "CREATE TABLE used_jtis (issuer TEXT NOT NULL, jti TEXT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (issuer, jti))",
                "CREATE INDEX used_jtis_expiry ON used_jtis (expires_at)",
                """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, client_id TEXT NOT NULL,
                    auth_time BIGINT NOT NULL, amr TEXT NOT NULL, scope TEXT NOT NULL, created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL, revoked_at BIGINT, generation BIGINT NOT NULL DEFAULT 0, retry_generation BIGINT,
                    rotated_at BIGINT, purge_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sessions_user ON sessions (user_id)",
                "CREATE INDEX sessions_purge ON sessions (purge_at)",
                """
                CREATE TABLE issuer_keys (
                    issuer TEXT NOT NULL, key_id TEXT NOT NULL, algorithm TEXT NOT NULL, public_key BYTEA NOT NULL,
                    audience TEXT NOT NULL, allowed_claims TEXT NOT NULL, max_lifetime BIGINT NOT NULL, created_at BIGINT NOT NULL,
                    PRIMARY KEY (issuer, key_id))
                """,
                "CREATE TABLE test_keys (key_id TEXT PRIMARY KEY, algorithm TEXT NOT NULL, public_key BYTEA NOT NULL, created_at BIGINT NOT NULL)",
                """
                CREATE TABLE signing_keys (
                    key_id TEXT PRIMARY KEY, algorithm TEXT NOT NULL, sealed_private_key BYTEA NOT NULL, public_key BYTEA NOT NULL,
                    created_at BIGINT NOT NULL, retired_at BIGINT)
                """,
                "CREATE TABLE admin_tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL, hash BYTEA NOT NULL UNIQUE, created_at BIGINT NOT NULL)",
            ]
        ),
        (
            "0002_events",
            [
                """
                CREATE TABLE events (
                    id TEXT PRIMARY KEY, at BIGINT NOT NULL, kind TEXT NOT NULL, actor TEXT NOT NULL, user_id TEXT, session_id TEXT,
                    detail TEXT)
                """,
                "CREATE INDEX events_user ON events (user_id)",
            ]
        ),
        (
            "0003_revoked_admin_tokens",
            ["CREATE TABLE revoked_admin_tokens (hash BYTEA PRIMARY KEY, id TEXT NOT NULL, revoked_at BIGINT NOT NULL)"]
        ),
        // Sign-in nonces are MAC'd and stateless now; a used one is remembered in used_jtis until it expires.
        ("0004_stateless_sign_in_nonces", ["DROP TABLE nonces"]),
        // A username is unique within its source: Latch's own users ('') or one federated issuer.
        (
            "0005_usernames_per_source",
            [
                "ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT ''",
                "UPDATE users SET source = issuer WHERE issuer IS NOT NULL",
                "ALTER TABLE users ALTER COLUMN source DROP DEFAULT",
                "ALTER TABLE users DROP CONSTRAINT users_username_key",
                "CREATE UNIQUE INDEX users_source_username ON users (source, username)",
            ]
        ),
        (
            "0006_attestation",
            [
                "ALTER TABLE clients ADD COLUMN evidence TEXT NOT NULL DEFAULT '{}'",
                """
                CREATE TABLE signing_certificates (
                    client_id TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
                    sha256 TEXT NOT NULL,
                    owner TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (client_id, sha256)
                )
                """,
                "CREATE INDEX signing_certificates_owner ON signing_certificates (owner)",
                "ALTER TABLE device_keys ADD COLUMN attestation TEXT",
                "ALTER TABLE device_keys ADD COLUMN sign_count BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE device_keys ADD COLUMN receipt BYTEA",
                "CREATE INDEX device_keys_key_id ON device_keys (key_id)",
            ]
        ),
        (
            "0007_authenticators",
            [
                """
                CREATE TABLE authenticators (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    credential_id BYTEA NOT NULL UNIQUE,
                    public_key BYTEA NOT NULL,
                    sign_count BIGINT NOT NULL,
                    aaguid BYTEA NOT NULL,
                    format TEXT NOT NULL,
                    name TEXT NOT NULL,
                    backup_eligible BOOLEAN NOT NULL,
                    created_at BIGINT NOT NULL,
                    last_used_at BIGINT
                )
                """,
                "CREATE INDEX authenticators_user ON authenticators (user_id, created_at)",
            ]
        ),
        (
            "0008_authenticator_failures",
            [
                "ALTER TABLE authenticators ADD COLUMN failed_attempts BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE authenticators ADD COLUMN last_failed_at BIGINT",
            ]
        ),
        (
            "0009_out_of_band",
            [
                """
                CREATE TABLE oob_transactions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    operation TEXT NOT NULL,
                    token_hash BYTEA NOT NULL UNIQUE,
                    status_token_hash BYTEA NOT NULL UNIQUE,
                    message TEXT,
                    state TEXT NOT NULL,
                    requested_by TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    redeemed_at BIGINT,
                    completed_at BIGINT,
                    authenticator_id TEXT
                )
                """,
                "CREATE INDEX oob_transactions_expiry ON oob_transactions (expires_at)",
                "CREATE INDEX oob_transactions_user ON oob_transactions (user_id)",
            ]
        ),
        (
            "0010_issuer_login",
            [
                """
                CREATE TABLE login_issuers (
                    id TEXT PRIMARY KEY,
                    audience TEXT NOT NULL,
                    keys_json TEXT NOT NULL,
                    jwks_url TEXT,
                    max_token_lifetime BIGINT NOT NULL,
                    allowed_scopes TEXT NOT NULL,
                    custom_federation BOOLEAN NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                // A session's (issuer, consumer) pairs go with it; none refers to login_issuers (a session keeps its pairs).
                """
                CREATE TABLE session_consumers (
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    issuer_id TEXT NOT NULL,
                    consumer_id TEXT NOT NULL,
                    added_at BIGINT NOT NULL,
                    PRIMARY KEY (session_id, issuer_id, consumer_id)
                )
                """,
                "CREATE INDEX session_consumers_pair ON session_consumers (issuer_id, consumer_id)",
                "CREATE TABLE resource_servers (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash BYTEA NOT NULL, created_at BIGINT NOT NULL)",
            ]
        ),
        (
            "0011_custom_registration",
            [
                """
                CREATE TABLE custom_providers (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    flow TEXT NOT NULL,
                    hook_url TEXT NOT NULL,
                    sealed_secret BYTEA NOT NULL,
                    timeout BIGINT NOT NULL,
                    retries BIGINT NOT NULL,
                    transaction_lifetime BIGINT NOT NULL,
                    allowed_claims TEXT NOT NULL,
                    enabled BOOLEAN NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                // A provider's transactions go with it; none refers to clients (a deleted app's transactions expire).
                """
                CREATE TABLE custom_transactions (
                    id TEXT PRIMARY KEY,
                    provider_id TEXT NOT NULL REFERENCES custom_providers (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    init_data TEXT,
                    attempts BIGINT NOT NULL,
                    last_status BIGINT,
                    user_id TEXT,
                    registration_id TEXT,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    finished_at BIGINT
                )
                """,
                "CREATE INDEX custom_transactions_provider ON custom_transactions (provider_id, state)",
                "CREATE INDEX custom_transactions_expiry ON custom_transactions (expires_at)",
            ]
        ),
        (
            "0012_dpop",
            [
                // The RFC 7638 thumbprint of the DPoP key a session's tokens are bound to (RFC 9449), if any.
                "ALTER TABLE sessions ADD COLUMN dpop_jkt TEXT",
            ]
        ),
        (
            "0013_federation",
            [
                // Upstream OpenID providers Latch signs users in through; the settings are JSON, the client secret sealed.
                """
                CREATE TABLE upstream_idps (
                    id TEXT PRIMARY KEY,
                    settings TEXT NOT NULL,
                    sealed_secret BYTEA,
                    created_at BIGINT NOT NULL
                )
                """,
                // Browsers signed in at the hosted pages: the SHA-256 of the cookie's secret.
                """
                CREATE TABLE web_sessions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    upstream_idp TEXT NOT NULL REFERENCES upstream_idps (id) ON DELETE CASCADE,
                    auth_time BIGINT NOT NULL,
                    sealed_upstream_id_token BYTEA,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    ended_at BIGINT
                )
                """,
                "CREATE INDEX web_sessions_user ON web_sessions (user_id)",
                "CREATE INDEX web_sessions_idp ON web_sessions (upstream_idp)",
                "CREATE INDEX web_sessions_expiry ON web_sessions (expires_at)",
            ]
        ),
        (
            "0014_audit_log",
            [
                // The audit log: every security event, chained by an HMAC (the store computes it; see AuditChain).
                // Events recorded before the chain existed are kept, unchained (mac NULL), before its anchor.
                """
                CREATE TABLE audit_log (
                    seq BIGINT PRIMARY KEY,
                    id TEXT NOT NULL,
                    at BIGINT NOT NULL,
                    kind TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    user_id TEXT,
                    session_id TEXT,
                    client_id TEXT,
                    detail TEXT,
                    address TEXT,
                    user_agent TEXT,
                    request_id TEXT,
                    mac BYTEA
                )
                """,
                """
                INSERT INTO audit_log (seq, id, at, kind, actor, user_id, session_id, detail)
                    SELECT row_number() OVER (ORDER BY id), id, at, kind, actor, user_id, session_id, detail FROM events
                """,
                "DROP TABLE events",
                "CREATE INDEX audit_log_user ON audit_log (user_id, seq)",
                "CREATE INDEX audit_log_kind ON audit_log (kind, seq)",
                "CREATE INDEX audit_log_at ON audit_log (at)",
                // The chain's head (the last record) and anchor (where verification starts), one row: units that
                // record events lock it until they commit, so the chain is written one record after another.
                """
                CREATE TABLE audit_head (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    head_seq BIGINT NOT NULL,
                    head_mac BYTEA NOT NULL,
                    anchor_seq BIGINT NOT NULL,
                    anchor_mac BYTEA NOT NULL
                )
                """,
                """
                INSERT INTO audit_head (id, head_seq, head_mac, anchor_seq, anchor_mac)
                    SELECT 1, count(*), decode(repeat('00', 32), 'hex'), count(*), decode(repeat('00', 32), 'hex') FROM audit_log
                """,
            ]
        ),
        (
            "0015_admin_accounts",
            [
                // Admin accounts; a username is unique ignoring case (username_key is its lowercase form).
                """
                CREATE TABLE admins (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL,
                    username_key TEXT NOT NULL UNIQUE,
                    role TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    created_by TEXT
                )
                """,
                // The built-in owner, holding whatever existing tokens and resources there are (a fresh database
                // gets it when the first token is stored).
                """
                INSERT INTO admins (id, username, username_key, role, created_at, created_by)
                    SELECT 'adm_root', 'root', 'root', 'owner', coalesce((SELECT min(created_at) FROM admin_tokens), 0), NULL
                    WHERE EXISTS (SELECT 1 FROM admin_tokens) OR EXISTS (SELECT 1 FROM test_keys)
                        OR EXISTS (SELECT 1 FROM signing_certificates)
                """,
                // Each token belongs to an account, carries a role and may expire (NULL: never).
                "ALTER TABLE admin_tokens ADD COLUMN account_id TEXT NOT NULL DEFAULT 'adm_root'",
                "ALTER TABLE admin_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'owner'",
                "ALTER TABLE admin_tokens ADD COLUMN expires_at BIGINT",
                "CREATE INDEX admin_tokens_account ON admin_tokens (account_id)",
                // Test keys and signing certificates are owned by the account that created them (before: by a
                // token, and every token was the built-in owner's).
                "ALTER TABLE test_keys ADD COLUMN owner TEXT",
                "UPDATE test_keys SET owner = 'adm_root'",
                "CREATE INDEX test_keys_owner ON test_keys (owner)",
                """
                UPDATE signing_certificates SET owner = coalesce(
                    (SELECT account_id FROM admin_tokens WHERE admin_tokens.id = signing_certificates.owner), 'adm_root')
                """,
            ]
        ),
        (
            "0016_admin_passkeys",
            [
                // The passkeys admins sign in to the console with; they go with their account.
                """
                CREATE TABLE admin_passkeys (
                    id TEXT PRIMARY KEY,
                    account_id TEXT NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
                    credential_id BYTEA NOT NULL UNIQUE,
                    public_key BYTEA NOT NULL,
                    sign_count BIGINT NOT NULL,
                    aaguid BYTEA NOT NULL,
                    name TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    last_used_at BIGINT
                )
                """,
                "CREATE INDEX admin_passkeys_account ON admin_passkeys (account_id)",
            ]
        ),
        (
            "0017_audit_sealer",
            [
                // Units of work write audit records as plain rows — numbered from a sequence, stamped with their
                // transaction's id, carrying an entry MAC — and lock nothing; the sealer links them into the chain
                // afterwards (position, mac) in commit order (PostgresStore+Events.swift says why the order is safe).
                // Records chained before keep their place: their position is the number they were chained under.
                "ALTER TABLE audit_log ADD COLUMN position BIGINT",
                "ALTER TABLE audit_log ADD COLUMN entry_mac BYTEA",
                "ALTER TABLE audit_log ADD COLUMN txid xid8",
                "UPDATE audit_log SET position = seq",
                "CREATE UNIQUE INDEX audit_log_position ON audit_log (position)",
                "CREATE INDEX audit_log_unsealed ON audit_log (txid, seq) WHERE position IS NULL",
                "CREATE SEQUENCE audit_log_seq OWNED BY audit_log.seq",
                """
                SELECT setval('audit_log_seq',
                    GREATEST((SELECT max(seq) FROM audit_log), (SELECT head_seq FROM audit_head WHERE id = 1), 0) + 1, false)
                """,
                "ALTER TABLE audit_log ALTER COLUMN seq SET DEFAULT nextval('audit_log_seq')",
                "ALTER TABLE audit_log ALTER COLUMN txid SET DEFAULT pg_current_xact_id()",
            ]
        ),
        (
            "0018_pin_binding",
            [
                // A PIN authenticator's device binding key (65-byte uncompressed P-256 point); NULL for other
                // authenticators and for PIN authenticators registered before binding.
                "ALTER TABLE authenticators ADD COLUMN pin_binding_key BYTEA",
            ]
        ),
    ]

    /// The advisory lock that lets one replica at a time migrate.
    static let lockKey: Int64 = 0x4C41_5443_484D_4947  // "LATCHMIG"

    /// Applies missing migrations in one transaction under an advisory lock, so replicas starting together
    /// migrate once; refuses a schema newer than this binary, or one whose names differ.
    static func apply(_ client: PostgresClient, now: Int64, logger: Logger) async throws -> [String] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS latch_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
                logger: logger)
            var applied: [(Int, String)] = []
            for try await (version, name) in try await connection.query(
                "SELECT version, name FROM latch_migrations ORDER BY version", logger: logger
            ).decode((Int, String).self) {
                applied.append((version, name))
            }
            guard applied.count <= all.count else {
                throw MigrationError("the database schema (version \(applied.count)) is newer than this Latch (\(all.count)); upgrade Latch")
            }
            for (index, (version, name)) in applied.enumerated() where version != index + 1 || name != all[index].name {
                throw MigrationError("migration \(version) in the database is \(name), expected \(all[index].name)")
            }
            var names: [String] = []
            for (index, migration) in all.enumerated().dropFirst(applied.count) {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let version = index + 1
                try await connection.query(
                    "INSERT INTO latch_migrations (version, name, applied_at) VALUES (\(version), \(migration.name), \(now))", logger: logger)
                names.append(migration.name)
            }
            return names
        }
    }
}
