#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster on a loopback port, then stops it and deletes it.
#   scripts/with-postgres.sh swift test
# Exports LATCH_TEST_POSTGRES_URL (a superuser URL; the tests create one database per test),
# LATCH_TEST_PG_CTL (a command that stops/starts this cluster, for the fault tests) and LATCH_TEST_POSTGRES_CA (the
# cluster's self-signed TLS certificate, for the TLS tests).
# Needs PostgreSQL's server binaries (Debian: apt-get install -y postgresql). As root, the cluster runs as the
# `postgres` user (initdb refuses root).
set -euo pipefail
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: no PostgreSQL server binaries found (apt-get install -y postgresql)" >&2
  exit 3
fi
dir=$(mktemp -d /tmp/latch-pg.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runas=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  runas=(su postgres -s /bin/sh -c)
else
  runas=(sh -c)
fi
"${runas[@]}" "'$bindir/initdb' -D '$dir/data' -U latch --auth=trust -E UTF8 >'$dir/initdb.log' 2>&1"
# A self-signed certificate for 127.0.0.1, so the TLS modes can be tested (plain connections keep working).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$dir/server.key" -out "$dir/server.crt" >/dev/null 2>&1
chmod 600 "$dir/server.key"
if [ "$(id -u)" = 0 ]; then chown postgres "$dir/server.key" "$dir/server.crt"; fi
options="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=on"
options="$options -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
cat > "$dir/pgctl" <<CTL
#!/bin/bash
# pgctl stop|start: stops or starts this test cluster only (the fault tests use it).
# Descriptors above 2 are closed first: the server is a daemon and must not inherit the caller's (a test
# runner that waits for them to close would wait for the server to exit).
for fd in /proc/\$\$/fd/*; do n=\${fd##*/}; [ "\$n" -gt 2 ] 2>/dev/null && eval "exec \$n>&-"; done
cmd="'$bindir/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -o '$options' \$1"
if [ "\$(id -u)" = 0 ]; then exec su postgres -s /bin/sh -c "\$cmd"; else exec sh -c "\$cmd"; fi
CTL
chmod +x "$dir/pgctl"
"$dir/pgctl" start >/dev/null
cleanup() {
  "$dir/pgctl" stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
export LATCH_TEST_POSTGRES_URL="postgres://latch@127.0.0.1:$port/postgres"
export LATCH_TEST_PG_CTL="$dir/pgctl"
export LATCH_TEST_POSTGRES_CA="$dir/server.crt"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($dir)"
"$@"
