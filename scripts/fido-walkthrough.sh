#!/usr/bin/env bash
# FIDO walkthrough: a PIN authenticator through `latch device fido` (the SDK) against a running `latch serve`, then
# credentials made by Yubico's python-fido2 over HTTP (scripts/webauthn_fido2_http.py) when it is installed.
# Five wrong PINs lock the authenticator at the server; an admin unlocks it. Start Latch with
# `LATCH_FIDO_PIN_COOL_DOWNS=0` (no waits between wrong PINs, for the demo), then:
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/fido-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH (the latch executable; default `swift run latch`), WORK.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/walkthrough-common.sh"

echo "1. A user registers with a test key and signs in; the server's FIDO policy"
$LATCH admin test-keys create --key-id fido-key --out test.pem
$LATCH device register --state-dir phone --test-key test.pem --key-id fido-key --name fido
$LATCH device sign-in --state-dir phone
$LATCH device fido policy --state-dir phone

echo "2. A PIN against the policy is refused (exit 2); a good one registers a PIN authenticator"
expect_exit 2 $LATCH device fido register --state-dir phone --pin 1234
expect_exit 2 $LATCH device fido register --state-dir phone --pin 111111
$LATCH device fido register --state-dir phone --pin 480219 --name "phone PIN"

echo "3. Sign out, sign in with the PIN"
$LATCH device sign-out --state-dir phone
$LATCH device fido sign-in --state-dir phone --pin 480219

echo "4. Five wrong PINs: each counted by the server (exit 9), then locked; the right PIN is refused"
for attempt in 1 2 3 4 5; do expect_exit 9 $LATCH device fido sign-in --state-dir phone --pin 000111; done
$LATCH device fido status --state-dir phone | tee status.txt
grep -q lockedOut status.txt
expect_exit 9 $LATCH device fido sign-in --state-dir phone --pin 480219
echo "the PIN authenticator is locked at the server"

echo "5. An admin finds the user's authenticator and unlocks it; the PIN works again"
user=$($LATCH device whoami --state-dir phone | sed -n 's/.*"sub" *: *"\([^"]*\)".*/\1/p' | head -n 1)
authenticator=$($LATCH admin users authenticators list "$user" | sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p' | head -n 1)
$LATCH admin users authenticators unlock "$user" "$authenticator"
$LATCH device fido sign-in --state-dir phone --pin 480219

echo "6. PIN change: the old PIN stops working, the new one signs in"
$LATCH device fido pin-change --state-dir phone --pin 480219 --new-pin 613370
expect_exit 9 $LATCH device fido sign-in --state-dir phone --pin 480219
# --no-dpop: a bearer session, whose access token step 7 lends to python-fido2 (a DPoP-bound one needs the device's proofs)
$LATCH device fido sign-in --state-dir phone --pin 613370 --no-dpop
$LATCH device status --state-dir phone

echo "7. Credentials made by python-fido2 register and sign in over HTTP"
if python3 -c "import fido2" 2>/dev/null; then
  token=$(sed -n 's/.*"accessToken" *: *"\([^"]*\)".*/\1/p' phone/*/tokens* 2>/dev/null | head -n 1)
  python3 "$SCRIPTS/webauthn_fido2_http.py" --server "$LATCH_SERVER" --access-token "$token" --user-id "$user"
else
  echo "skipped: python-fido2 is not installed (python3 -m pip install fido2)"
fi

echo "8. The user lists and deletes every authenticator"
$LATCH device fido list --state-dir phone
$LATCH device fido delete --state-dir phone --all
expect_exit 4 $LATCH device fido sign-in --state-dir phone --pin 613370

echo "9. Passwordless sign-up on a new device: the PIN authenticator is the new user's first credential"
$LATCH device fido sign-up --state-dir tablet --pin 731904 --username walker-new --name "tablet PIN"
expect_exit 8 $LATCH device fido sign-up --state-dir other --pin 731904 --username walker-new
$LATCH device fido sign-in --state-dir tablet --pin 731904
$LATCH device whoami --state-dir tablet | grep -q walker-new
$LATCH device fido list --state-dir tablet
echo "fido walkthrough done"
