#!/usr/bin/env bash
# Glewlwyd 2.7 (Debian's `glewlwyd` package), the reference peer of issue 31's CPU-per-request comparisons, set up as
# `latch bench` measures Latch: SQLite, an OpenID Connect plugin signing with ES256, rotating (one-use) refresh tokens,
# on 127.0.0.1:4593. CPU per request is the server process's utime + stime from /proc around a `wrk` run.
#
#   scripts/peers/glewlwyd.sh start             # a fresh instance in $GLEWLWYD_DIR (default /tmp/latch-glewlwyd)
#   scripts/peers/glewlwyd.sh bench-refresh 8   # rotating refresh, wrk -t2 -c2, 8 s: rate, errors, µs CPU/request
#   scripts/peers/glewlwyd.sh bench-get 8 /api/oidc/jwks   # any GET (JWKS; discovery is /api/oidc/.well-known/openid-configuration)
#   scripts/peers/glewlwyd.sh stop
#
# Needs: apt-get install -y glewlwyd wrk jq sqlite3 openssl curl. Loopback only; every run is bounded by its seconds.
set -euo pipefail
dir=${GLEWLWYD_DIR:-/tmp/latch-glewlwyd}
api=http://127.0.0.1:4593/api
here=$(cd "$(dirname "$0")" && pwd)

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

# Calls the admin or user API with the cookie jar $jar; fails on an answer other than 2xx.
call() {
  local method=$1 url=$2 body=${3:-} out
  if [ -n "$body" ]; then
    out=$(curl -s -b "$jar" -c "$jar" -X "$method" -H 'Content-Type: application/json' -d "$body" -w '\n%{http_code}' "$url")
  else
    out=$(curl -s -b "$jar" -c "$jar" -X "$method" -w '\n%{http_code}' "$url")
  fi
  case ${out##*$'\n'} in 2*) ;; *) echo "$method $url -> HTTP ${out##*$'\n'}: ${out%$'\n'*}" >&2; return 1 ;; esac
}

start() {
  running && stop
  rm -rf "$dir" && mkdir -p "$dir"
  openssl ecparam -name prime256v1 -genkey -noout -out "$dir/key.pem"
  openssl req -new -x509 -key "$dir/key.pem" -subj "/CN=127.0.0.1" -days 2 -out "$dir/cert.pem" 2>/dev/null
  # The packaged configuration, on loopback, logging errors only, with its own SQLite database.
  sed -e "s|^external_url=.*|bind_address=\"127.0.0.1\"\nexternal_url=\"http://127.0.0.1:4593\"|" \
      -e "s|^log_level=.*|log_level=\"ERROR\"|" -e "s|^log_file=.*|log_file=\"$dir/glewlwyd.log\"|" \
      -e "s|^@include \"/etc/glewlwyd/glewlwyd-db.conf\"|database = { type = \"sqlite3\"; path = \"$dir/glewlwyd.db\"; };|" \
      /etc/glewlwyd/glewlwyd.conf > "$dir/glewlwyd.conf"
  grep -q "$dir/glewlwyd.db" "$dir/glewlwyd.conf" || { echo "glewlwyd.sh: /etc/glewlwyd/glewlwyd.conf has an unexpected form" >&2; exit 1; }
  zcat /usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz | sqlite3 "$dir/glewlwyd.db"
  # The OIDC plugin: ES256, one-use refresh tokens (a reused one is refused and ends the chain, as Latch's rotation).
  local parameters
  parameters=$(jq -n -c --rawfile key "$dir/key.pem" --rawfile cert "$dir/cert.pem" '{
    "iss": "http://127.0.0.1:4593/api/oidc", "jwt-type": "ecdsa", "jwt-key-size": "256", "key": $key, "cert": $cert,
    "jwks-uri": "", "jwks-private": "", "default-kid": "", "jwks-public": "", "jwks-show": true, "jwks-x5c": [],
    "access-token-duration": 3600, "refresh-token-duration": 1209600, "code-duration": 600,
    "refresh-token-rolling": true, "refresh-token-one-use": "always", "client-refresh-token-one-use-parameter": "",
    "allow-non-oidc": false, "auth-type-code-enabled": true, "auth-type-token-enabled": true,
    "auth-type-id-token-enabled": true, "auth-type-none-enabled": true, "auth-type-password-enabled": false,
    "auth-type-client-enabled": true, "auth-type-refresh-enabled": true,
    "subject-type": "public", "scope": [], "claims": [], "name-claim": "on-demand", "email-claim": "no",
    "address-claim": {"type": "no"}}')
  sqlite3 "$dir/glewlwyd.db" "INSERT INTO g_plugin_module_instance (gpmi_module, gpmi_name, gpmi_display_name, gpmi_parameters, gpmi_enabled)
    VALUES ('oidc', 'oidc', 'OpenID Connect', '${parameters//\'/\'\'}', 1);"
  setsid /usr/bin/glewlwyd --config-file="$dir/glewlwyd.conf" </dev/null >>"$dir/stdout" 2>&1 &
  echo $! > "$dir/pid"
  for _ in $(seq 1 50); do
    curl -sf -o /dev/null "$api/oidc/jwks" && break
    running || { echo "glewlwyd exited: $dir/stdout, $dir/glewlwyd.log" >&2; exit 1; }
    sleep 0.2
  done
  curl -sf -o /dev/null "$api/oidc/jwks" || { echo "glewlwyd did not answer within 10 s" >&2; exit 1; }
  # A user (bench / benchpass), a public client (bench: code and refresh_token) and the user's consent to openid,
  # made by the init script's administrator (admin / password).
  jar=$(mktemp)
  call POST "$api/auth/" '{"username":"admin","password":"password"}'
  call POST "$api/user/" '{"username":"bench","password":"benchpass","name":"Bench","scope":["openid","g_profile"],"enabled":true}'
  call POST "$api/client/" '{"client_id":"bench","name":"Bench","confidential":false,"enabled":true,"scope":[],
    "redirect_uri":["http://127.0.0.1/cb"],"authorization_type":["code","refresh_token"]}'
  rm -f "$jar"
  call POST "$api/auth/" '{"username":"bench","password":"benchpass"}'
  call PUT "$api/auth/grant/bench" '{"scope":"openid"}'
  rm -f "$jar"
  echo "glewlwyd $(dpkg-query -W -f '${Version}' glewlwyd 2>/dev/null) on 127.0.0.1:4593, pid $(cat "$dir/pid"), in $dir"
}

stop() {
  running || { rm -f "$dir/pid"; return 0; }
  local pid
  pid=$(cat "$dir/pid")
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

# N refresh tokens, each from its own authorization-code flow, one per line.
tokens() {
  local count=$1 location code answer token
  jar=$(mktemp)
  call POST "$api/auth/" '{"username":"bench","password":"benchpass"}'
  for i in $(seq 1 "$count"); do
    # g_continue: without it the plugin sends the browser to its login page even with a session and consent.
    location=$(curl -s -b "$jar" -o /dev/null -w '%{redirect_url}' \
      "$api/oidc/auth?response_type=code&client_id=bench&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb&scope=openid&nonce=n$i&state=s$i&g_continue")
    code=$(printf %s "$location" | sed -n 's/.*[?&]code=\([^&]*\).*/\1/p')
    [ -n "$code" ] || { echo "no code in the authorization redirect: $location" >&2; exit 1; }
    answer=$(curl -s --data-urlencode grant_type=authorization_code --data-urlencode code="$code" \
      --data-urlencode client_id=bench --data-urlencode redirect_uri=http://127.0.0.1/cb "$api/oidc/token")
    token=$(printf %s "$answer" | jq -r '.refresh_token // empty')
    [[ "$token" =~ ^[A-Za-z0-9]+$ ]] || { echo "no refresh token in: $answer" >&2; exit 1; }
    echo "$token"
  done
  rm -f "$jar"
}

ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$(cat "$dir/pid")/stat"; }

# Prints rate, errors and µs of Glewlwyd's CPU per request for one wrk run; fails when any answer was wrong.
report() {
  local output=$1 before=$2 after=$3 requests rate non2xx
  requests=$(echo "$output" | awk '/requests in/ { print $1 }')
  rate=$(echo "$output" | awk '/^Requests\/sec:/ { print $2 }')
  non2xx=$(echo "$output" | awk '/Non-2xx/ { print $NF }')
  awk -v r="$requests" -v rate="$rate" -v e="${non2xx:-0}" -v d=$((after - before)) \
    'BEGIN { printf "glewlwyd %s/s, %d non-2xx, %.0f µs CPU/request\n", rate, e, (r > 0 ? d * 10000 / r : 0) }'
  [ "${non2xx:-0}" = 0 ] && [ "${requests:-0}" -gt 0 ]
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  tokens) tokens "${2:?tokens N}" ;;
  bench-refresh)
    seconds=${2:?bench-refresh SECONDS}
    running || { echo "not running: scripts/peers/glewlwyd.sh start" >&2; exit 1; }
    tokens 4 > "$dir/tokens.txt"   # wrk -t2 -c2: a token per connection, one more per thread
    before=$(ticks)
    output=$(TOKENS_FILE="$dir/tokens.txt" THREADS=2 wrk -t2 -c2 -d"${seconds}s" -s "$here/glewlwyd-refresh.lua" http://127.0.0.1:4593)
    after=$(ticks)
    echo "$output" | grep -E "^RESULT|^first bad" || true
    echo "$output" | grep -q "bad=0 starved=0" || { echo "$output" >&2; exit 1; }
    report "$output" "$before" "$after"
    ;;
  bench-get)
    seconds=${2:?bench-get SECONDS PATH}
    running || { echo "not running: scripts/peers/glewlwyd.sh start" >&2; exit 1; }
    before=$(ticks)
    output=$(wrk -t2 -c32 -d"${seconds}s" "http://127.0.0.1:4593${3:?bench-get SECONDS PATH}")
    after=$(ticks)
    report "$output" "$before" "$after"
    ;;
  *) sed -n '2,12p' "$0"; exit 1 ;;
esac
