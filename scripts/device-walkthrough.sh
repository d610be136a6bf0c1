#!/usr/bin/env bash
# The README's device walkthrough: `latch device` (the SDK on the command line) against a running `latch serve`.
# Start Latch first (`swift run latch serve`), then:
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/device-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH (the latch executable; default `swift run latch`), WORK.
set -euo pipefail
export LATCH_SERVER=${LATCH_SERVER:-http://localhost:8080}
: "${LATCH_ADMIN_TOKEN:?set LATCH_ADMIN_TOKEN to the admin token latch printed at first start}"
LATCH=${LATCH:-swift run latch}
WORK=${WORK:-$(mktemp -d)}
cd "$WORK"

echo "1. An admin creates a test registration key and prints the app's client configuration"
$LATCH admin test-keys create --key-id demo-key --out test.pem
$LATCH admin client-config > latch-client.json

echo "2. Phone A registers (the SDK makes a P-256 device key) and signs in with it"
$LATCH device register --config latch-client.json --state-dir phone-a --test-key test.pem --key-id demo-key --name demo
$LATCH device sign-in --config latch-client.json --state-dir phone-a
$LATCH device whoami --config latch-client.json --state-dir phone-a
# The tokens are DPoP-bound to the device key (RFC 9449): the SDK proves it on every token request and API call.
$LATCH device whoami --config latch-client.json --state-dir phone-a --binding | tee binding.json
grep -q '"token_type" *: *"DPoP"' binding.json && grep -q '"device_key" *: *true' binding.json

echo "3. Refresh (rotates the refresh token), then sign out and back in"
$LATCH device refresh --config latch-client.json --state-dir phone-a
$LATCH device sign-out --config latch-client.json --state-dir phone-a
$LATCH device sign-in --config latch-client.json --state-dir phone-a

echo "4. A second device of the same user (a copy of phone A's state) signs in; phone A signs out everywhere"
cp -R phone-a phone-b
$LATCH device sign-in --config latch-client.json --state-dir phone-b
$LATCH device global-sign-out --config latch-client.json --state-dir phone-a
status=0
$LATCH device refresh --config latch-client.json --state-dir phone-b || status=$?
echo "phone B's next refresh exits $status (5 = not signed in)"
test "$status" = 5

echo "5. Phone A signs in again and deletes the account (needs a recent sign-in)"
$LATCH device sign-in --config latch-client.json --state-dir phone-a
$LATCH device deregister --config latch-client.json --state-dir phone-a
status=0
$LATCH device sign-in --config latch-client.json --state-dir phone-a || status=$?
echo "after de-registration, sign-in exits $status (4 = not registered)"
test "$status" = 4
echo "done: state in $WORK"
