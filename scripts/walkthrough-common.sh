# Sourced by the walkthroughs that drive a running `latch serve` with the CLI: the server, the admin token, the
# latch executable, a work folder (entered), SCRIPTS (this folder) and `expect_exit`.
# Env: LATCH_SERVER (default http://localhost:8080), LATCH_ADMIN_TOKEN (required), LATCH (default `swift run latch`), WORK.
export LATCH_SERVER=${LATCH_SERVER:-http://localhost:8080}
: "${LATCH_ADMIN_TOKEN:?set LATCH_ADMIN_TOKEN to the admin token latch printed at first start}"
LATCH=${LATCH:-swift run latch}
WORK=${WORK:-$(mktemp -d)}
SCRIPTS=$(cd "$(dirname "$0")" && pwd)  # the sourcing script's folder, before leaving it
cd "$WORK"
expect_exit() {  # expect_exit CODE command…: runs it, requires that exit code
  local want=$1 status=0
  shift
  "$@" || status=$?
  echo "exit $status"
  test "$status" = "$want"
}
