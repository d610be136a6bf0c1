#!/usr/bin/env bash
# The whole test suite. With PostgreSQL's server binaries on the machine it runs the PostgreSQL suites too, on a
# throwaway cluster (scripts/with-postgres.sh); without them those suites report that they skipped.
# Extra arguments go to `swift test` (e.g. --filter Flow).
set -euo pipefail
cd "$(dirname "$0")/.."
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exec scripts/with-postgres.sh swift test "$@"
fi
echo "test.sh: PostgreSQL server binaries not found; PostgreSQL tests will be skipped (apt-get install -y postgresql to run them)"
exec swift test "$@"
