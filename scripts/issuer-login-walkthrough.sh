#!/usr/bin/env bash
# Issuer login walkthrough (docs/issuer-login.md), runnable: curl + openssl + python3 (standard library only).
# Two login issuers (a bank whose token names two consumers, and a card programme) log one user in with ONE request;
# the session's tokens list every (issuer, consumer) pair; a resource server introspects the access token; a third
# issuer token is added to the session; logout-all ends every session of those consumers, and introspection and
# Latch's own endpoints refuse them at once. Start Latch first (`swift run latch serve`), then:
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/issuer-login-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH_ADMIN_TOKEN, WORK (a folder for keys and tokens).
set -euo pipefail
LATCH_SERVER=${LATCH_SERVER:-http://localhost:8080}
: "${LATCH_ADMIN_TOKEN:?set LATCH_ADMIN_TOKEN to the admin token latch printed at first start}"
WORK=${WORK:-$(mktemp -d)}
cd "$WORK"
GRANT=urn:latch:params:oauth:grant-type:issuer-login
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
expect() {  # expect FILE CONDITION: the JSON in FILE, as `j`, must satisfy the Python CONDITION
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
if not eval(sys.argv[2], {"j": j}):
    sys.exit(f"check failed: {sys.argv[2]}\n  on {json.dumps(j)}")
EOF
}
claims() {  # claims JWT: its payload, as JSON
  python3 -c 'import base64,sys; p=sys.argv[1].split(".")[1]; print(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)).decode())' "$1"
}
admin() {  # admin METHOD PATH [JSON]: an admin API call; fails on any error answer
  curl -sf -X "$1" "$LATCH_SERVER$2" -H "Authorization: Bearer $LATCH_ADMIN_TOKEN" -H 'Content-Type: application/json' ${3:+-d "$3"}
}
# openssl writes an ECDSA signature as DER (SEQUENCE of two INTEGERs); JWS ES256 wants raw R||S, 32 bytes each
# (RFC 7518 §3.4).
der_to_jose() {
  python3 -c '
import sys
d = sys.stdin.buffer.read()
assert d[0] == 0x30, "not a DER SEQUENCE"
i = 2 if d[1] < 0x80 else 2 + (d[1] & 0x7F)
out = b""
for _ in range(2):
    assert d[i] == 0x02, "not a DER INTEGER"
    n = d[i + 1]
    v = d[i + 2:i + 2 + n].lstrip(b"\0")
    assert len(v) <= 32, "not a P-256 signature"
    out += v.rjust(32, b"\0")
    i += 2 + n
sys.stdout.buffer.write(out)'
}
mint() {  # mint KEY ISSUER KID AUDIENCE "CONSUMER…" [SCOPE]: an ES256 issuer token, valid 120 s
  local key=$1 iss=$2 kid=$3 aud=$4 sub=$5 scope=${6:-} now header payload signature
  now=$(date +%s)
  header=$(printf '{"alg":"ES256","kid":"%s","typ":"JWT"}' "$kid" | b64url)
  payload=$(printf '{"iss":"%s","sub":"%s","aud":"%s","jti":"%s","iat":%d,"exp":%d%s}' \
    "$iss" "$sub" "$aud" "$(openssl rand -hex 16)" "$now" $((now + 120)) "${scope:+,\"scope\":\"$scope\"}" | b64url)
  signature=$(printf '%s.%s' "$header" "$payload" | openssl dgst -sha256 -sign "$key" | der_to_jose | b64url)
  echo "$header.$payload.$signature"
}
pem() { python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$1"; }
BANK_AUD=$LATCH_SERVER/issuers/bank
CARD_AUD=$LATCH_SERVER/issuers/card

echo "1. Each issuer's backend has its own ES256 key (P-256)"
for name in bank card; do
  openssl ecparam -name prime256v1 -genkey -noout -out "$name.pem"
  openssl ec -in "$name.pem" -pubout -out "$name.pub" 2>/dev/null
done

echo "2. The admin registers both as login issuers (static keys; the bank may also send the scope 'payments')"
admin POST /admin/v1/login-issuers "{\"issuerId\":\"bank\",\"audience\":\"$BANK_AUD\",\"allowedScopes\":[\"payments\"],
  \"keys\":[{\"kid\":\"bank-1\",\"algorithm\":\"ES256\",\"publicKey\":$(pem bank.pub)}]}" > bank-issuer.json
admin POST /admin/v1/login-issuers "{\"issuerId\":\"card\",\"audience\":\"$CARD_AUD\",
  \"keys\":[{\"kid\":\"card-1\",\"algorithm\":\"ES256\",\"publicKey\":$(pem card.pub)}]}" > card-issuer.json
admin GET /admin/v1/login-issuers > issuers.json
expect issuers.json 'sorted(i["issuerId"] for i in j["loginIssuers"]) == ["bank", "card"] and all(i["maxTokenLifetime"] == 300 for i in j["loginIssuers"])'

echo "3. The backends mint issuer tokens: the bank's names two consumers (sub 'c-1001 c-1002'), the card's one"
mint bank.pem bank bank-1 "$BANK_AUD" "c-1001 c-1002" payments > bank.jwt
mint card.pem card card-1 "$CARD_AUD" "k-77" > card.jwt
claims "$(cat bank.jwt)" | tee bank-claims.json

echo "4. One login with both tokens (issuer_token repeated): one session holding three (issuer, consumer) pairs"
curl -sf -X POST "$LATCH_SERVER/oauth2/token" -d grant_type=$GRANT \
  -d issuer_token="$(cat bank.jwt)" -d issuer_token="$(cat card.jwt)" > tokens.json
field access_token < tokens.json > access_token
claims "$(field id_token < tokens.json)" > id-claims.json
python3 -c 'import json,sys; j=json.load(open("id-claims.json")); print(json.dumps({k: j[k] for k in ("sub", "username", "amr", "auth_time", "sid", "consumers")}, indent=2))'
expect id-claims.json 'j["consumers"] == [{"issuer": "bank", "consumer": "c-1001"}, {"issuer": "bank", "consumer": "c-1002"}, {"issuer": "card", "consumer": "k-77"}]'
expect id-claims.json 'j["amr"] == ["issuer"] and j["username"] == "c-1001"'

echo "5. The app asks how old its login is (and whether a sensitive operation is allowed now)"
curl -sf "$LATCH_SERVER/v1/me/login-status" -H "Authorization: Bearer $(cat access_token)" | tee status.json; echo
expect status.json 'len(j["consumers"]) == 3 and j["sensitiveAllowed"] and j["loginAge"] <= j["sensitiveMaxAge"]'
curl -sf "$LATCH_SERVER/v1/me/login-status?sensitive=true" -H "Authorization: Bearer $(cat access_token)" >/dev/null

echo "6. A resource server gets a credential and introspects the access token (RFC 7662, HTTP Basic)"
admin POST /admin/v1/resource-servers '{"name":"payments-api"}' > resource-server.json
RS_ID=$(field clientId < resource-server.json)
RS_SECRET=$(field clientSecret < resource-server.json)
introspect() {  # introspect TOKEN [max_age]
  curl -sf -X POST "$LATCH_SERVER/oauth2/introspect" -u "$RS_ID:$RS_SECRET" -d token="$1" ${2:+-d max_age="$2"}
}
introspect "$(cat access_token)" | tee introspection.json; echo
expect introspection.json 'j["active"] is True and len(j["consumers"]) == 3 and "error" not in j'
sleep 1
introspect "$(cat access_token)" 0 > step-up.json  # the API wants a login younger than 0 s: RFC 9470
expect step-up.json 'j["active"] is True and j["error"] == "insufficient_user_authentication" and j["max_age"] == 0'
echo "with max_age=0 the answer says $(field error < step-up.json)"

echo "7. A replayed token is refused, named by its 0-based index; nothing else in that request is used"
mint card.pem card card-1 "$CARD_AUD" "k-77" > card2.jwt
status=$(curl -s -o replay.json -w '%{http_code}' -X POST "$LATCH_SERVER/oauth2/token" -d grant_type=$GRANT \
  -d issuer_token="$(cat card2.jwt)" -d issuer_token="$(cat bank.jwt)")
cat replay.json; echo
test "$status" = 400
expect replay.json 'j["error"] == "invalid_grant" and j["tokenIndex"] == 1'

echo "8. A second device logs in for the card consumer k-77 alone (its own session)"
curl -sf -X POST "$LATCH_SERVER/oauth2/token" -d grant_type=$GRANT -d issuer_token="$(cat card2.jwt)" > device-b.json
field access_token < device-b.json > access_token_b

echo "9. The first app adds a third token to its session (Bearer + the same grant): same sid, a fourth pair"
mint bank.pem bank bank-1 "$BANK_AUD" "c-1003" > bank2.jwt
curl -sf -X POST "$LATCH_SERVER/oauth2/token" -H "Authorization: Bearer $(cat access_token)" \
  -d grant_type=$GRANT -d issuer_token="$(cat bank2.jwt)" > tokens2.json
claims "$(field id_token < tokens2.json)" > id-claims2.json
python3 - <<'EOF'
import json
before, after = json.load(open("id-claims.json")), json.load(open("id-claims2.json"))
assert after["sid"] == before["sid"], "adding tokens must keep the session"
assert after["sub"] == before["sub"], "the principal must not change"
assert {"issuer": "bank", "consumer": "c-1003"} in after["consumers"] and len(after["consumers"]) == 4
assert after["auth_time"] >= before["auth_time"]
print(f'session {after["sid"]}: {len(after["consumers"])} pairs, auth_time {before["auth_time"]} -> {after["auth_time"]}')
EOF
field access_token < tokens2.json > access_token2
curl -sf "$LATCH_SERVER/v1/me/login-status" -H "Authorization: Bearer $(cat access_token2)" > status2.json
expect status2.json 'len(j["consumers"]) == 4'

echo "10. logout-all: every session holding any of these pairs ends (this one, and device B's: card/k-77)"
curl -sf -X POST "$LATCH_SERVER/v1/me/logout-all" -H "Authorization: Bearer $(cat access_token2)" | tee logout.json; echo
expect logout.json 'j["revoked"] == 2'

echo "11. Refused at once: introspection says inactive, Latch answers 401"
introspect "$(cat access_token)" | tee after.json; echo
expect after.json 'j == {"active": False}'
introspect "$(cat access_token_b)" > after-b.json
expect after-b.json 'j == {"active": False}'
for token in access_token access_token2 access_token_b; do
  status=$(curl -s -o /dev/null -w '%{http_code}' "$LATCH_SERVER/v1/me" -H "Authorization: Bearer $(cat $token)")
  echo "after logout-all, /v1/me with $token answers $status"
  test "$status" = 401
done

echo "12. The admin ends every session of one consumer, on every device"
mint bank.pem bank bank-1 "$BANK_AUD" "c-1001" > bank3.jwt
curl -sf -X POST "$LATCH_SERVER/oauth2/token" -d grant_type=$GRANT -d issuer_token="$(cat bank3.jwt)" > tokens3.json
admin POST /admin/v1/login-issuers/bank/consumers/c-1001/logout-all | tee admin-logout.json; echo
expect admin-logout.json 'j["revoked"] == 1'
introspect "$(field access_token < tokens3.json)" > after3.json
expect after3.json 'j == {"active": False}'
echo "issuer-login walkthrough done"
