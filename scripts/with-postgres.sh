#!/usr/bin/env bash
# Runs a command with throwaway PostgreSQL clusters on loopback ports, then stops and deletes them.
#   scripts/with-postgres.sh swift test
# Two clusters, so that the outage test can stop its database without failing the tests running beside it:
# - the shared one: LATCH_TEST_POSTGRES_URL (a superuser URL; the tests create one database per test) and
#   LATCH_TEST_POSTGRES_CA (its self-signed TLS certificate, for the TLS tests);
# - the outage test's own: LATCH_TEST_OUTAGE_POSTGRES_URL and LATCH_TEST_PG_CTL (a command that stops/starts it).
# Needs PostgreSQL's server binaries (Debian: apt-get install -y postgresql). As root, the clusters run as the
# `postgres` user (initdb refuses root).
set -euo pipefail
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: no PostgreSQL server binaries found (apt-get install -y postgresql)" >&2
  exit 3
fi
dirs=()
cleanup() {
  for dir in "${dirs[@]}"; do
    "$dir/pgctl" stop >/dev/null 2>&1 || true
    rm -rf "$dir"
  done
}
trap cleanup EXIT

# start_cluster: initdb + a self-signed certificate + start; sets $dir and $port.
start_cluster() {
  dir=$(mktemp -d /tmp/latch-pg.XXXXXX)
  dirs+=("$dir")
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local runas=(sh -c)
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    runas=(su postgres -s /bin/sh -c)
  fi
  "${runas[@]}" "'$bindir/initdb' -D '$dir/data' -U latch --auth=trust -E UTF8 >'$dir/initdb.log' 2>&1"
  # A self-signed certificate for 127.0.0.1, so the TLS modes can be tested (plain connections keep working).
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$dir/server.key" -out "$dir/server.crt" >/dev/null 2>&1
  chmod 600 "$dir/server.key"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir/server.key" "$dir/server.crt"; fi
  local options="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=on -c synchronous_commit=on"
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
}

start_cluster
export LATCH_TEST_POSTGRES_URL="postgres://latch@127.0.0.1:$port/postgres"
export LATCH_TEST_POSTGRES_CA="$dir/server.crt"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($dir)"
start_cluster
export LATCH_TEST_OUTAGE_POSTGRES_URL="postgres://latch@127.0.0.1:$port/postgres"
export LATCH_TEST_PG_CTL="$dir/pgctl"
echo "with-postgres: the outage test's cluster on 127.0.0.1:$port ($dir)"
"$@"
