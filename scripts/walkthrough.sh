#!/usr/bin/env bash
# The README's five-minute walkthrough, runnable: curl + openssl (+ python3 for the third-party check).
# Start Latch first (`swift run latch serve`), then:
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/walkthrough.sh
# Env: LATCH (default http://localhost:8080), LATCH_ADMIN_TOKEN, WORK (a folder for keys and tokens).
set -euo pipefail
LATCH=${LATCH:-http://localhost:8080}
WORK=${WORK:-$(mktemp -d)}
: "${LATCH_ADMIN_TOKEN:?set LATCH_ADMIN_TOKEN to the admin token latch printed at first start}"
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
cd "$WORK"
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

echo "1. Create the issuer key your backend signs with, and register its public half with Latch"
openssl genrsa -out issuer.pem 2048 2>/dev/null
openssl rsa -in issuer.pem -RSAPublicKey_out -out issuer.pub 2>/dev/null
curl -sf -X POST "$LATCH/admin/v1/issuers" -H "Authorization: Bearer $LATCH_ADMIN_TOKEN" \
  -H 'Content-Type: application/json' \
  -d "{\"name\":\"acme\",\"keyId\":\"acme-1\",\"publicKey\":$(python3 -c 'import json;print(json.dumps(open("issuer.pub").read()))')}" >/dev/null

echo "2. Mint a short-lived custom federated JWT for user alice (what your backend does per sign-in)"
mint() {
  local now header payload signature
  now=$(date +%s)
  header=$(printf '{"alg":"RS256","kid":"acme-1","typ":"JWT"}' | b64url)
  payload=$(printf '{"iss":"acme","sub":"alice","aud":"identity-service","jti":"%s","iat":%d,"exp":%d}' \
    "$(openssl rand -hex 16)" "$now" $((now + 300)) | b64url)
  signature=$(printf '%s.%s' "$header" "$payload" | openssl dgst -sha256 -sign issuer.pem | b64url)
  echo "$header.$payload.$signature"
}
mint > registration.jwt

echo "3. Register alice (the same kind of JWT proves who she is)"
curl -sf -X POST "$LATCH/v1/registrations" -H 'Content-Type: application/json' \
  -d "{\"challengeType\":\"FSSO\",\"answer\":\"$(cat registration.jwt)\",\"registrationId\":\"$(python3 -c 'import uuid;print(uuid.uuid4())')\"}" \
  | tee registration.json | field userId > user_id

echo "4. Sign in: exchange a fresh JWT for tokens (RFC 7523 JWT-bearer grant)"
mint > sign-in.jwt
curl -sf -X POST "$LATCH/oauth2/token" -d grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer \
  -d assertion="$(cat sign-in.jwt)" > tokens.json
field refresh_token < tokens.json > refresh_1

echo "5. Refresh: every refresh rotates the refresh token"
curl -sf -X POST "$LATCH/oauth2/token" -d grant_type=refresh_token -d refresh_token="$(cat refresh_1)" > tokens2.json
field refresh_token < tokens2.json > refresh_2
field id_token < tokens2.json > id_token
field access_token < tokens2.json > access_token

echo "6. Verify the ID token against the published JWKS with a third-party library"
issuer=$(curl -sf "$LATCH/.well-known/openid-configuration" | field issuer)
python3 "$SCRIPTS/verify_token.py" "$issuer" "$(cat id_token)" default | tee verified.json

echo "7. Ask who is signed in, then sign out (revoke this device's refresh token)"
curl -sf "$LATCH/oauth2/userinfo" -H "Authorization: Bearer $(cat access_token)"; echo
curl -sf -X POST "$LATCH/oauth2/revoke" -d token="$(cat refresh_2)" >/dev/null
status=$(curl -s -o /dev/null -w '%{http_code}' "$LATCH/oauth2/userinfo" -H "Authorization: Bearer $(cat access_token)")
echo "after sign-out, userinfo answers $status"
test "$status" = 401
echo "done: state in $WORK"
