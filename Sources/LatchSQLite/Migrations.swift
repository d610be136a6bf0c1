import LatchCore

/// Latch's schema as one ordered list of migrations. The PostgreSQL store keeps the same names in the same
/// order. A migration, once released, never changes: new needs get a new entry at the end.
enum Migrations {
    struct Migration {
        let name: String
        let sql: String
    }

    static let all: [Migration] = [
        Migration(
            name: "0001_core",
            sql: """
                CREATE TABLE clients (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT;

                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    issuer TEXT,
                    subject TEXT,
                    claims TEXT NOT NULL DEFAULT '{}',
                    created_at INTEGER NOT NULL
                ) STRICT;
                -- Not a partial index: SQLite re-prepares statements whose bound parameters are checked against a
                -- partial index's WHERE clause on every bind. UNIQUE already lets NULLs repeat.
                CREATE UNIQUE INDEX users_federated ON users (issuer, subject);

                CREATE TABLE device_keys (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    key_id TEXT NOT NULL,
                    algorithm TEXT NOT NULL,
                    public_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (user_id, key_id)
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE registrations (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    proof_hash BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX registrations_user ON registrations (user_id);

                CREATE TABLE nonces (
                    nonce TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    expires_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX nonces_user ON nonces (user_id, expires_at);
                CREATE INDEX nonces_expiry ON nonces (expires_at);

                CREATE TABLE used_jtis (
                    issuer TEXT NOT NULL,
                    jti TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    PRIMARY KEY (issuer, jti)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX used_jtis_expiry ON used_jtis (expires_at);

                -- One row per refresh-token family. Refresh tokens are MACs over (id, generation): nothing of
                -- them is stored, and a rotation updates this row in place.
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    auth_time INTEGER NOT NULL,
                    amr TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    revoked_at INTEGER,
                    generation INTEGER NOT NULL DEFAULT 0,
                    retry_generation INTEGER,
                    rotated_at INTEGER,
                    -- When housekeeping may delete the row: its expiry, or a day after revocation.
                    purge_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX sessions_user ON sessions (user_id);
                CREATE INDEX sessions_purge ON sessions (purge_at);

                CREATE TABLE issuer_keys (
                    issuer TEXT NOT NULL,
                    key_id TEXT NOT NULL,
                    algorithm TEXT NOT NULL,
                    public_key BLOB NOT NULL,
                    audience TEXT NOT NULL,
                    allowed_claims TEXT NOT NULL,
                    max_lifetime INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (issuer, key_id)
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE test_keys (
                    key_id TEXT PRIMARY KEY,
                    algorithm TEXT NOT NULL,
                    public_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE signing_keys (
                    key_id TEXT PRIMARY KEY,
                    algorithm TEXT NOT NULL,
                    sealed_private_key BLOB NOT NULL,
                    public_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    retired_at INTEGER
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE admin_tokens (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    hash BLOB NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            name: "0002_events",
            sql: """
                -- Security events, written in the unit of work of the change they record. No foreign key: an event
                -- outlives the user it names.
                CREATE TABLE events (
                    id TEXT PRIMARY KEY,
                    at INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    user_id TEXT,
                    session_id TEXT,
                    detail TEXT
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX events_user ON events (user_id);
                """),
        Migration(
            name: "0003_revoked_admin_tokens",
            sql: """
                -- Hashes of revoked admin tokens: a revoked LATCH_ADMIN_TOKEN is not stored again at the next start.
                CREATE TABLE revoked_admin_tokens (
                    hash BLOB PRIMARY KEY,
                    id TEXT NOT NULL,
                    revoked_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            name: "0004_stateless_sign_in_nonces",
            sql: """
                -- Sign-in nonces are MAC'd and stateless now; a used one is remembered in used_jtis until it expires.
                DROP TABLE nonces;
                """),
        Migration(
            name: "0005_usernames_per_source",
            sql: """
                -- A username is unique within its source: Latch's own users (source '') or one federated issuer
                -- (source = the issuer), so nobody can squat another source's names. SQLite cannot drop a
                -- column's UNIQUE: the table is rebuilt (foreign keys are off while migrations run).
                CREATE TABLE users_new (
                    id TEXT PRIMARY KEY,
                    source TEXT NOT NULL,
                    username TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    issuer TEXT,
                    subject TEXT,
                    claims TEXT NOT NULL DEFAULT '{}',
                    created_at INTEGER NOT NULL
                ) STRICT;
                INSERT INTO users_new (id, source, username, kind, issuer, subject, claims, created_at)
                    SELECT id, coalesce(issuer, ''), username, kind, issuer, subject, claims, created_at FROM users;
                DROP TABLE users;
                ALTER TABLE users_new RENAME TO users;
                CREATE UNIQUE INDEX users_source_username ON users (source, username);
                CREATE UNIQUE INDEX users_federated ON users (issuer, subject);
                """),
        Migration(
            name: "0006_attestation",
            sql: """
                -- An app's device-evidence settings (JSON; secrets inside are sealed).
                ALTER TABLE clients ADD COLUMN evidence TEXT NOT NULL DEFAULT '{}';
                -- Android signing-certificate fingerprints, each owned by the admin identity that added it.
                CREATE TABLE signing_certificates (
                    client_id TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
                    sha256 TEXT NOT NULL,
                    owner TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (client_id, sha256)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX signing_certificates_owner ON signing_certificates (owner);
                -- How a device key was attested, its signature counter and kept evidence (App Attest's receipt).
                ALTER TABLE device_keys ADD COLUMN attestation TEXT;
                ALTER TABLE device_keys ADD COLUMN sign_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE device_keys ADD COLUMN receipt BLOB;
                CREATE INDEX device_keys_key_id ON device_keys (key_id);
                """),
        Migration(
            name: "0007_authenticators",
            sql: """
                -- FIDO authenticators (WebAuthn credentials); a credential id belongs to one user.
                CREATE TABLE authenticators (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    credential_id BLOB NOT NULL UNIQUE,
                    public_key BLOB NOT NULL,
                    sign_count INTEGER NOT NULL,
                    aaguid BLOB NOT NULL,
                    format TEXT NOT NULL,
                    name TEXT NOT NULL,
                    backup_eligible INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_used_at INTEGER
                ) STRICT;
                CREATE INDEX authenticators_user ON authenticators (user_id, created_at);
                """),
        Migration(
            name: "0008_authenticator_failures",
            sql: """
                -- Failed proofs of PIN authenticators, counted by the server (lockout and cool-down).
                ALTER TABLE authenticators ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE authenticators ADD COLUMN last_failed_at INTEGER;
                """),
        Migration(
            name: "0009_out_of_band",
            sql: """
                -- Out-of-band enrollments, approvals and deregistrations: redeemed once with a token, watched with
                -- another; only the tokens' SHA-256 are kept.
                CREATE TABLE oob_transactions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    operation TEXT NOT NULL,
                    token_hash BLOB NOT NULL UNIQUE,
                    status_token_hash BLOB NOT NULL UNIQUE,
                    message TEXT,
                    state TEXT NOT NULL,
                    requested_by TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    redeemed_at INTEGER,
                    completed_at INTEGER,
                    authenticator_id TEXT
                ) STRICT;
                CREATE INDEX oob_transactions_expiry ON oob_transactions (expires_at);
                CREATE INDEX oob_transactions_user ON oob_transactions (user_id);
                """),
        Migration(
            name: "0010_issuer_login",
            sql: """
                -- Login issuers: app backends whose short-lived tokens prove their user authenticated (keys as given,
                -- JSON; scopes a JSON array of strings).
                CREATE TABLE login_issuers (
                    id TEXT PRIMARY KEY,
                    audience TEXT NOT NULL,
                    keys_json TEXT NOT NULL,
                    jwks_url TEXT,
                    max_token_lifetime INTEGER NOT NULL,
                    allowed_scopes TEXT NOT NULL,
                    custom_federation INTEGER NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                -- The (issuer, consumer) pairs a login session holds; they go with their session. No foreign key to
                -- login_issuers: a session keeps its pairs when its issuer is deleted (it ends on its own).
                CREATE TABLE session_consumers (
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    issuer_id TEXT NOT NULL,
                    consumer_id TEXT NOT NULL,
                    added_at INTEGER NOT NULL,
                    PRIMARY KEY (session_id, issuer_id, consumer_id)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX session_consumers_pair ON session_consumers (issuer_id, consumer_id);
                -- Resource servers allowed to introspect tokens; only their secret's SHA-256 is kept.
                CREATE TABLE resource_servers (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    secret_hash BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            name: "0011_custom_registration",
            sql: """
                -- Custom identity providers: the operator's HTTP hooks that decide registrations (the hook's secret
                -- sealed; allowed claims a JSON array of strings; times in seconds).
                CREATE TABLE custom_providers (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    flow TEXT NOT NULL,
                    hook_url TEXT NOT NULL,
                    sealed_secret BLOB NOT NULL,
                    timeout INTEGER NOT NULL,
                    retries INTEGER NOT NULL,
                    transaction_lifetime INTEGER NOT NULL,
                    allowed_claims TEXT NOT NULL,
                    enabled INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                -- Custom registrations in progress and their outcomes; they go with their provider. No foreign key to
                -- clients (sessions have none either): a deleted app's transactions expire and are purged.
                CREATE TABLE custom_transactions (
                    id TEXT PRIMARY KEY,
                    provider_id TEXT NOT NULL REFERENCES custom_providers (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    init_data TEXT,
                    attempts INTEGER NOT NULL,
                    last_status INTEGER,
                    user_id TEXT,
                    registration_id TEXT,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    finished_at INTEGER
                ) STRICT;
                CREATE INDEX custom_transactions_provider ON custom_transactions (provider_id, state);
                CREATE INDEX custom_transactions_expiry ON custom_transactions (expires_at);
                """),
        Migration(
            name: "0012_dpop",
            sql: """
                -- The RFC 7638 thumbprint of the DPoP key a session's tokens are bound to (RFC 9449), if any.
                ALTER TABLE sessions ADD COLUMN dpop_jkt TEXT;
                """),
        Migration(
            name: "0013_federation",
            sql: """
                -- Upstream OpenID providers Latch signs users in through; the settings are JSON, the client secret sealed.
                CREATE TABLE upstream_idps (
                    id TEXT PRIMARY KEY,
                    settings TEXT NOT NULL,
                    sealed_secret BLOB,
                    created_at INTEGER NOT NULL
                ) STRICT;
                -- Browsers signed in at the hosted pages: the SHA-256 of the cookie's secret.
                CREATE TABLE web_sessions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    upstream_idp TEXT NOT NULL REFERENCES upstream_idps (id) ON DELETE CASCADE,
                    auth_time INTEGER NOT NULL,
                    sealed_upstream_id_token BLOB,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    ended_at INTEGER
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX web_sessions_user ON web_sessions (user_id);
                CREATE INDEX web_sessions_idp ON web_sessions (upstream_idp);
                CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
                """),
        Migration(
            name: "0014_audit_log",
            sql: """
                -- The audit log: every security event, chained by an HMAC (the store computes it; see AuditChain).
                -- Events recorded before the chain existed are kept, unchained (mac NULL), before its anchor.
                CREATE TABLE audit_log (
                    seq INTEGER PRIMARY KEY,
                    id TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    user_id TEXT,
                    session_id TEXT,
                    client_id TEXT,
                    detail TEXT,
                    address TEXT,
                    user_agent TEXT,
                    request_id TEXT,
                    mac BLOB
                ) STRICT;
                INSERT INTO audit_log (seq, id, at, kind, actor, user_id, session_id, detail)
                    SELECT row_number() OVER (ORDER BY id), id, at, kind, actor, user_id, session_id, detail FROM events;
                DROP TABLE events;
                CREATE INDEX audit_log_user ON audit_log (user_id, seq);
                CREATE INDEX audit_log_kind ON audit_log (kind, seq);
                CREATE INDEX audit_log_at ON audit_log (at);
                -- The chain's head (the last record) and anchor (where verification starts), one row.
                CREATE TABLE audit_head (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    head_seq INTEGER NOT NULL,
                    head_mac BLOB NOT NULL,
                    anchor_seq INTEGER NOT NULL,
                    anchor_mac BLOB NOT NULL
                ) STRICT;
                INSERT INTO audit_head (id, head_seq, head_mac, anchor_seq, anchor_mac)
                    SELECT 1, count(*), zeroblob(32), count(*), zeroblob(32) FROM audit_log;
                """),
        Migration(
            name: "0015_admin_accounts",
            sql: """
                -- Admin accounts; a username is unique ignoring case (username_key is its lowercase form).
                CREATE TABLE admins (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL,
                    username_key TEXT NOT NULL UNIQUE,
                    role TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    created_by TEXT
                ) STRICT, WITHOUT ROWID;
                -- The built-in owner, holding whatever existing tokens and resources there are (a fresh database
                -- gets it when the first token is stored).
                INSERT INTO admins (id, username, username_key, role, created_at, created_by)
                    SELECT 'adm_root', 'root', 'root', 'owner', coalesce((SELECT min(created_at) FROM admin_tokens), 0), NULL
                    WHERE EXISTS (SELECT 1 FROM admin_tokens) OR EXISTS (SELECT 1 FROM test_keys)
                        OR EXISTS (SELECT 1 FROM signing_certificates);
                -- Each token belongs to an account, carries a role and may expire (NULL: never).
                ALTER TABLE admin_tokens ADD COLUMN account_id TEXT NOT NULL DEFAULT 'adm_root';
                ALTER TABLE admin_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'owner';
                ALTER TABLE admin_tokens ADD COLUMN expires_at INTEGER;
                CREATE INDEX admin_tokens_account ON admin_tokens (account_id);
                -- Test keys and signing certificates are owned by the account that created them (before: by a token,
                -- and every token was the built-in owner's).
                ALTER TABLE test_keys ADD COLUMN owner TEXT;
                UPDATE test_keys SET owner = 'adm_root';
                CREATE INDEX test_keys_owner ON test_keys (owner);
                UPDATE signing_certificates SET owner = coalesce((SELECT account_id FROM admin_tokens WHERE id = signing_certificates.owner), 'adm_root');
                """),
        Migration(
            name: "0016_admin_passkeys",
            sql: """
                -- The passkeys admins sign in to the console with; they go with their account.
                CREATE TABLE admin_passkeys (
                    id TEXT PRIMARY KEY,
                    account_id TEXT NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
                    credential_id BLOB NOT NULL UNIQUE,
                    public_key BLOB NOT NULL,
                    sign_count INTEGER NOT NULL,
                    aaguid BLOB NOT NULL,
                    name TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_used_at INTEGER
                ) STRICT;
                CREATE INDEX admin_passkeys_account ON admin_passkeys (account_id);
                """),
        Migration(
            name: "0017_audit_sealer",
            sql: """
                -- Units of work write audit records as plain rows, numbered by SQLite and carrying an entry MAC; the
                -- sealer links them into the chain afterwards (position, mac). Records chained before keep their place:
                -- their position is the number they were chained under.
                ALTER TABLE audit_log ADD COLUMN position INTEGER;
                ALTER TABLE audit_log ADD COLUMN entry_mac BLOB;
                UPDATE audit_log SET position = seq;
                CREATE UNIQUE INDEX audit_log_position ON audit_log (position);
                """),
        Migration(
            name: "0018_pin_binding",
            sql: """
                -- A PIN authenticator's device binding key (65-byte uncompressed P-256 point); NULL for other
                -- authenticators and for PIN authenticators registered before binding.
                ALTER TABLE authenticators ADD COLUMN pin_binding_key BLOB;
                """),
    ]

    /// Applies the migrations `handle` lacks, in one transaction; refuses a schema newer than this binary or one
    /// whose applied names differ from this list.
    static func apply(on handle: SQLiteHandle, now: Int64) throws -> [String] {
        try handle.execute(
            """
            CREATE TABLE IF NOT EXISTS latch_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            ) STRICT;
            """)
        // Off while migrating, so that rebuilding a table does not cascade; checked before commit.
        try handle.run("PRAGMA foreign_keys = OFF")
        defer { _ = try? handle.run("PRAGMA foreign_keys = ON") }
        try handle.run("BEGIN IMMEDIATE")
        do {
            let applied = try handle.query("SELECT version, name FROM latch_migrations ORDER BY version")
            guard applied.count <= all.count else {
                throw MigrationError(
                    "the database schema (version \(applied.count)) is newer than this Latch (\(all.count)); upgrade Latch")
            }
            for (index, row) in applied.enumerated() {
                guard row.int(0) == Int64(index + 1), row.text(1) == all[index].name else {
                    throw MigrationError("migration \(index + 1) in the database is \(row.text(1)), expected \(all[index].name)")
                }
            }
            var names: [String] = []
            for (index, migration) in all.enumerated().dropFirst(applied.count) {
                try handle.execute(migration.sql)
                try handle.run(
                    "INSERT INTO latch_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    [.int(Int64(index + 1)), .text(migration.name), .int(now)])
                names.append(migration.name)
            }
            guard try handle.query("PRAGMA foreign_key_check").isEmpty else {
                throw MigrationError("a migration left rows whose foreign keys point nowhere; nothing was changed")
            }
            try handle.run("COMMIT")
            return names
        } catch {
            _ = try? handle.run("ROLLBACK")
            throw error
        }
    }
}
