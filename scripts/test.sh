#!/usr/bin/env bash
# The whole test suite. Builds first and fails on any compiler warning from Latch's own code (Sources, Tests,
# Examples; dependencies' warnings are theirs). With PostgreSQL's server binaries on the machine it runs the
# PostgreSQL suites too, on throwaway clusters (scripts/with-postgres.sh); without them those suites report that
# they skipped. Extra arguments go to `swift test` (e.g. --filter Flow). With LATCH_RELEASE_CHECK=1 it then builds
# the release configuration too (not in CI: 14-16 minutes cold on 2 cores would break CI's 30-minute budget; run it
# before landing a change and whenever `latch bench` is built).
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
swift build --build-tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || exit "$status"
if grep -E "^$(pwd)/(Sources|Tests|Examples)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u | grep . ; then
  echo "test.sh: the warnings above are in Latch's own code; fix them (zero warnings is the rule)" >&2
  exit 1
fi
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  scripts/with-postgres.sh swift test --skip-build "$@"
else
  echo "test.sh: PostgreSQL server binaries not found; PostgreSQL tests will be skipped (apt-get install -y postgresql to run them)"
  swift test --skip-build "$@"
fi
# With LATCH_RELEASE_CHECK=1, also build the release configuration that `latch bench` and deployments use: it
# compiles differently (whole-module), and once failed where every test passed.
if [ "${LATCH_RELEASE_CHECK:-}" = 1 ]; then
  set +e
  swift build -c release --product latch 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
  [ "$status" -eq 0 ] || { echo "test.sh: the release build failed" >&2; exit "$status"; }
  if grep -E "^$(pwd)/(Sources|Tests|Examples)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u | grep . ; then
    echo "test.sh: the release build warns in Latch's own code; fix it (zero warnings is the rule)" >&2
    exit 1
  fi
fi
