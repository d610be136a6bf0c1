#!/usr/bin/env bash
# The README's attestation walkthrough: simulated devices register with App Attest, Android key attestation and
# Play Integrity evidence — real formats, signed under a test root — and sign in, against a running `latch serve`.
# First (offline):  latch admin attestation test-root create --out test-root
# Then serve with:  LATCH_ATTESTATION_TEST_ROOT=test-root/root.pem swift run latch serve   (test keys stay on)
# Then:             LATCH_ADMIN_TOKEN=<token> TEST_ROOT=test-root scripts/attestation-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH (the latch executable; default `swift run latch`), WORK.
set -euo pipefail
export LATCH_SERVER=${LATCH_SERVER:-http://localhost:8080}
: "${LATCH_ADMIN_TOKEN:?set LATCH_ADMIN_TOKEN to the admin token latch printed at first start}"
: "${TEST_ROOT:?set TEST_ROOT to the folder of latch admin attestation test-root create}"
LATCH=${LATCH:-swift run latch}
WORK=${WORK:-$(mktemp -d)}
TEST_ROOT=$(cd "$TEST_ROOT" && pwd)
cd "$WORK"
APP_ID=ABCDE12345.com.example.demo
PACKAGE=com.example.demo
SIGNING_CERT=$(printf 'the demo app signing certificate' | sha256sum | cut -d' ' -f1)

echo "1. An admin registers the app's evidence: its Apple App ID, its Android package, Play Integrity keys, signing certificate"
$LATCH admin clients evidence default --ios-app-id "$APP_ID" --android-package "$PACKAGE" --play-integrity-keys "$TEST_ROOT/play-integrity.json"
$LATCH admin clients signing-certificates add default "$SIGNING_CERT"

echo "2. An iPhone registers with an App Attest attestation, then signs in twice with assertions (the counter grows)"
$LATCH device register --state-dir iphone --attest app-attest --test-root "$TEST_ROOT" --app-id "$APP_ID"
$LATCH device sign-in --state-dir iphone
$LATCH device sign-in --state-dir iphone
$LATCH device whoami --state-dir iphone

echo "3. An Android phone registers a Keystore key with its attestation chain and signs in with it"
$LATCH device register --state-dir android --attest android-key --test-root "$TEST_ROOT" --package "$PACKAGE" --signing-certificate "$SIGNING_CERT"
$LATCH device sign-in --state-dir android

echo "4. Another Android phone registers with a Play Integrity verdict binding the challenge and its key"
$LATCH device register --state-dir play --attest play-integrity --test-root "$TEST_ROOT" --package "$PACKAGE" --signing-certificate "$SIGNING_CERT"
$LATCH device sign-in --state-dir play

echo "5. Evidence for an app Latch does not know is refused (exit 1)"
status=0
$LATCH device register --state-dir stranger --attest app-attest --test-root "$TEST_ROOT" --app-id ABCDE12345.com.example.other || status=$?
echo "an unknown App ID exits $status (1 = refused)"
test "$status" = 1
echo "done: state in $WORK"
