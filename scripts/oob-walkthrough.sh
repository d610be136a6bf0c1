#!/usr/bin/env bash
# Out-of-band walkthrough: a backend (the admin CLI) enrols a new user's phone with a QR code, the phone (`latch device`,
# the SDK) redeems what zbarimg reads from the PNG, the backend polls the status; then an approval, a denial, a token
# redeemed twice, and device linking from the signed-in phone to a tablet. Start Latch, then:
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/oob-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH (the latch executable; default `swift run latch`), WORK.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/walkthrough-common.sh"
scan() {  # scan FILE.png: the QR code's text, read by zbarimg (QR codes only)
  zbarimg --raw -q -Sdisable -Sqrcode.enable "$1"
}
field() {  # field NAME FILE: a "name: value" line's value
  sed -n "s/^$1: //p" "$2" | head -n 1
}

echo "1. The backend asks for an enrollment of a new user; the QR code is a PNG"
$LATCH admin users enroll customer-7 --create --username Customer7 --qr-out enroll.png | tee enroll.txt
status_token=$(field "status token" enroll.txt)
$LATCH admin users enrollment-status "$status_token" | tee status.txt
grep -q '"pending"' status.txt

echo "2. The phone scans it (zbarimg reads the PNG) and enrols a PIN authenticator"
link=$(scan enroll.png)
test "$link" = "$(field link enroll.txt)"
$LATCH device oob "$link" --state-dir phone --pin 480219 --name phone
$LATCH admin users enrollment-status "$status_token" | tee status.txt
grep -q '"succeeded"' status.txt
echo "3. Redeemed twice: refused (exit 1)"
expect_exit 1 $LATCH device oob "$link" --state-dir phone --pin 480219

echo "4. The user signs in with the enrolled authenticator"
$LATCH device fido sign-in --state-dir phone --pin 480219

echo "5. An approval: the phone shows the backend's text and approves; another is denied"
$LATCH admin users enroll customer-7 --operation authentication --message "Pay 120 EUR to ACME?" --qr-out approve.png | tee approve.txt
$LATCH device oob "$(scan approve.png)" --state-dir phone --pin 480219 | tee approved.txt
grep -q "request: Pay 120 EUR to ACME?" approved.txt
$LATCH admin users enrollment-status "$(field "status token" approve.txt)" | grep -q '"approved"'
$LATCH admin users enroll customer-7 --operation authentication --message "Pay 9999 EUR to Mallory?" | tee deny.txt
$LATCH device oob "$(field link deny.txt)" --state-dir phone --pin 480219 --deny
$LATCH admin users enrollment-status "$(field "status token" deny.txt)" | grep -q '"denied"'

echo "6. Device linking: the signed-in phone shows a code, the tablet redeems it and joins the same user"
$LATCH device link --state-dir phone --qr-out link.png | tee link.txt
$LATCH device oob "$(scan link.png)" --state-dir tablet
$LATCH admin users enrollment-status "$(field "status token" link.txt)" | grep -q '"succeeded"'
$LATCH device fido sign-in --state-dir tablet
$LATCH device whoami --state-dir tablet | grep -q customer-7
$LATCH device fido list --state-dir phone
echo "oob walkthrough done"
