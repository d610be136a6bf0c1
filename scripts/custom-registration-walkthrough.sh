#!/usr/bin/env bash
# Custom registration walkthrough: the operator's own HTTP hooks decide registrations, driven by `latch device
# register --custom` (the SDK). It starts the two example hooks (Examples/InvitationHook, one-step; Examples/SMSHook,
# two-step) on free ports, registers them with `latch admin custom-providers add`, then: an invitation code (an
# unknown one first), an SMS code read from the hook's outbox (a wrong one first), three wrong codes (exit 10: start
# again), a used invitation (exit 10), input that runs out (exit 2, the transaction cancelled), a hook that is down
# (exit 3; the admin repoints it and the same command finishes), and the admin's transaction counts.
# Build first (`swift build`: latch and both hooks), start Latch with loopback hooks allowed, then:
#   LATCH_HOOKS_ALLOW_PRIVATE_ADDRESSES=true .build/debug/latch serve
#   LATCH_ADMIN_TOKEN=<the token latch printed> scripts/custom-registration-walkthrough.sh
# Env: LATCH_SERVER (default http://localhost:8080), LATCH (the latch executable; default .build/debug/latch), WORK,
# HOOKS (the folder of the built SMSHook and InvitationHook; default: beside $LATCH, else .build/debug).
set -euo pipefail
# The built latch by default: the hooks must be built anyway, and `swift run` cannot find the package from $WORK.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${LATCH:-}" ] && [ -x "$ROOT/.build/debug/latch" ]; then LATCH=$ROOT/.build/debug/latch; fi
if [ -n "${LATCH:-}" ] && [ -x "$LATCH" ]; then LATCH=$(cd "$(dirname "$LATCH")" && pwd)/$(basename "$LATCH"); fi  # works from $WORK
source "$ROOT/scripts/walkthrough-common.sh"
if [ -z "${HOOKS:-}" ]; then
  if [ -x "$LATCH" ]; then HOOKS=$(dirname "$LATCH"); else HOOKS=$ROOT/.build/debug; fi
fi
fail() { echo "FAILED: $*" >&2; exit 1; }
for hook in InvitationHook SMSHook; do
  [ -x "$HOOKS/$hook" ] || fail "$HOOKS/$hook is missing: build it with \`swift build\` (or set HOOKS to its folder)"
done

HOOK_PIDS=()  # the hooks (and their watchdog), stopped on exit
trap 'for pid in ${HOOK_PIDS[@]+"${HOOK_PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done' EXIT
start_hook() {  # start_hook NAME EXECUTABLE [VAR=VALUE…]: runs the hook on a free port; sets HOOK_PORT from its first line
  local name=$1 executable=$2 pid attempt
  shift 2
  env "$@" HOOK_HOST=127.0.0.1 HOOK_PORT=0 "$executable" > "$name.out" 2> "$name.err" &
  pid=$!
  HOOK_PIDS+=("$pid")
  for attempt in $(seq 300); do
    HOOK_PORT=$(sed -n '1s/^listening on \([0-9][0-9]*\)$/\1/p' "$name.out")
    [ -n "$HOOK_PORT" ] && { echo "$name listening on $HOOK_PORT"; return; }
    kill -0 "$pid" 2>/dev/null || fail "$name exited: $(cat "$name.out" "$name.err")"
    sleep 0.1
  done
  fail "$name did not print 'listening on <port>' within 30 s: $(cat "$name.out" "$name.err")"
}
device() {  # device OUT STATE-DIR ARGS…: `latch device ARGS…` on the device in STATE-DIR; output shown and kept in OUT, exit code in $status
  local out=$1 dir=$2
  shift 2
  status=0
  $LATCH device "$@" --config latch-client.json --state-dir "$dir" > "$out" 2>&1 || status=$?
  cat "$out"
  echo "exit $status"
}
has() { grep -qF -- "$2" "$1" || fail "$1 does not say '$2':"$'\n'"$(cat "$1")"; }  # has FILE TEXT
expect() {  # expect FILE CONDITION: the JSON in FILE, as `j`, must satisfy the Python CONDITION
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
if not eval(sys.argv[2], {"j": j}):
    sys.exit(f"FAILED: {sys.argv[2]}\n  on {json.dumps(j)}")
EOF
}
PHONE=+4930123456
OUTBOX=$PWD/sms-outbox.txt
: > "$OUTBOX"
sms_user() {  # sms_user WRONG: what a user types: the phone; once the SMS came, WRONG wrong codes, then the one it carries
  local wrong=$1 sent code n
  sent=$(wc -l < "$OUTBOX")
  echo "{\"phone\": \"$PHONE\"}"
  for n in $(seq 150); do [ "$(wc -l < "$OUTBOX")" -gt "$sent" ] && break; sleep 0.1; done
  code=$(sed -n "$((sent + 1))p" "$OUTBOX" | cut -d' ' -f3)
  [ -n "$code" ] || { echo "sms_user: no SMS came" >&2; return 1; }
  for n in $(seq "$wrong"); do printf '%06d\n' $(((10#$code + n) % 1000000)); done
  echo "$code"
}
last_sms() { tail -n 1 "$OUTBOX" | cut -d' ' -f"$1"; }  # last_sms FIELD: 1 transaction id, 2 phone, 3 code

echo "1. The operator runs two hooks, each with its own secret: invitation codes (one-step) and SMS codes (two-step)"
umask 077
for name in invitation sms down; do openssl rand -hex 24 > "$name.secret"; done
start_hook invitation-hook "$HOOKS/InvitationHook" HOOK_SECRET="$(cat invitation.secret)" INVITATION_CODES=ALPHA,BETA
INVITATION_URL=http://127.0.0.1:$HOOK_PORT/
start_hook sms-hook "$HOOKS/SMSHook" HOOK_SECRET="$(cat sms.secret)" SMS_OUTBOX="$OUTBOX"
SMS_URL=http://127.0.0.1:$HOOK_PORT/
# Should this script be killed outright (SIGKILL skips the EXIT trap), the hooks still stop within a second.
( while kill -0 $$ 2>/dev/null; do sleep 1; done; kill "${HOOK_PIDS[@]}" ) > /dev/null 2>&1 &
HOOK_PIDS+=("$!")

echo "2. The admin registers them as custom identity providers (secrets from files; attributes kept as claims)"
$LATCH admin custom-providers add --id invitation --name "Invitation code" --flow one_step \
  --hook-url "$INVITATION_URL" --hook-secret-file invitation.secret --allowed-claim invitation > invitation-provider.json
$LATCH admin custom-providers add --id sms --name "SMS code" --flow two_step \
  --hook-url "$SMS_URL" --hook-secret-file sms.secret --allowed-claim phone --transaction-lifetime 300 > sms-provider.json
$LATCH admin custom-providers list | tee providers.json
expect providers.json '[(p["id"], p["flow"], p["enabled"]) for p in j["customProviders"]] == [("invitation", "one_step", True), ("sms", "two_step", True)]'
expect providers.json 'not any("hookSecret" in p for p in j["customProviders"])'
$LATCH admin client-config > latch-client.json
device offered.txt any custom-providers
has offered.txt $'invitation\tone_step\tInvitation code'
has offered.txt $'sms\ttwo_step\tSMS code'

echo "3. One step: an unknown invitation code (4001: try again), then a good one: alice is registered and signs in"
device invite.txt phone-alice register --custom invitation \
  --data '{"code":"NOPE","username":"alice"}' --data '{"code":"ALPHA","username":"alice"}'
[ "$status" = 0 ] || fail "the invitation registration exited $status, not 0"
has invite.txt "the hook refused complete (status 4001); try again"
has invite.txt "unknown invitation code"
has invite.txt "registered alice (user id "
device alice-sign-in.txt phone-alice sign-in
[ "$status" = 0 ] || fail "alice's sign-in exited $status, not 0"
has alice-sign-in.txt "signed in as alice"
device alice-claims.json phone-alice whoami
expect alice-claims.json 'j["username"] == "alice" and j["invitation"] == "ALPHA"'

echo "4. Two steps, typed on standard input: the phone, then a wrong code, then the code the SMS carried"
device sms.txt phone-sms register --custom sms < <(sms_user 1)
[ "$status" = 0 ] || fail "the SMS registration exited $status, not 0"
echo "the SMS: $(tail -n 1 "$OUTBOX")"
has sms.txt "sms: init answered (status 2000)"
has sms.txt '"phoneHint" : "…56"'
has sms.txt "the hook refused complete (status 4001); try again"
has sms.txt '"remainingAttempts" : 2'
has sms.txt "registered $PHONE (user id "
SMS_DONE=$(last_sms 1)
device sms-sign-in.txt phone-sms sign-in
[ "$status" = 0 ] || fail "the SMS user's sign-in exited $status, not 0"
has sms-sign-in.txt "signed in as $PHONE"
device sms-claims.json phone-sms whoami
expect sms-claims.json 'j["username"] == "+4930123456" and j["phone"] == "+4930123456"'

echo "5. Three wrong codes: 4001, 4001, then 5001 - exit 10, the registration must start again"
device three-wrong.txt phone-three-wrong register --custom sms --data "{\"phone\": \"$PHONE\"}" --data 11111 --data 22222 --data 33333
[ "$status" = 10 ] || fail "three wrong codes exited $status, not 10 (restart)"
has three-wrong.txt "the registration must start again (hook status 5001)"
has three-wrong.txt "too many attempts"
SMS_FAILED=$(last_sms 1)
echo "   and an invitation used already: 5001, exit 10"
device reused.txt phone-reused register --custom invitation --data '{"code":"ALPHA","username":"mallory"}'
[ "$status" = 10 ] || fail "a used invitation exited $status, not 10 (restart)"
has reused.txt "the registration must start again (hook status 5001)"
has reused.txt "this invitation was used"
device reused-status.txt phone-reused status
has reused-status.txt "registered=false"

echo "6. --data runs out after init: the transaction is cancelled, exit 2"
device ran-out.txt phone-ran-out register --custom sms --data "{\"phone\": \"$PHONE\"}"
[ "$status" = 2 ] || fail "data running out exited $status, not 2"
has ran-out.txt "hook call 2 (complete) needs one more --data (1 given)"
SMS_CANCELLED=$(last_sms 1)
$LATCH admin custom-providers transactions sms --state cancelled | tee cancelled.json
expect cancelled.json "[t['transactionId'] for t in j['transactions']] == ['$SMS_CANCELLED'] and j['transactions'][0]['initCompleted']"

echo "7. A hook that is down (nothing listens on port 9): exit 3, the SDK keeps the request; once the admin"
echo "   points the provider at a running hook, the same command sends it again and the registration finishes"
$LATCH admin custom-providers add --id down --name "Down" --flow one_step --hook-url http://127.0.0.1:9/ \
  --hook-secret-file down.secret --retries 1 --timeout 2 > down-provider.json
device down.txt phone-bob register --custom down --data '{"code":"BETA","username":"bob"}'
[ "$status" = 3 ] || fail "a hook that is down exited $status, not 3 (unavailable)"
has down.txt "error: service unavailable: down's registration service (its hook) could not be reached"
$LATCH admin custom-providers transactions down --state open | tee down-open.json
expect down-open.json 'len(j["transactions"]) == 1 and j["transactions"][0]["attempts"] == 2 and j["transactions"][0].get("lastStatus") is None'
$LATCH admin custom-providers update down --hook-url "$INVITATION_URL" --hook-secret-file invitation.secret | tee down-updated.json
expect down-updated.json 'j["hookURL"] != "http://127.0.0.1:9/" and "hookSecret" not in j'
device down-again.txt phone-bob register --custom down --data '{"code":"BETA","username":"bob"}'
[ "$status" = 0 ] || fail "the repeated registration exited $status, not 0"
has down-again.txt "registered bob (user id "
device bob-sign-in.txt phone-bob sign-in
[ "$status" = 0 ] || fail "bob's sign-in exited $status, not 0"

echo "8. The admin's view: each provider's transactions and how many are in each state"
$LATCH admin custom-providers transactions sms | tee sms-transactions.json
expect sms-transactions.json 'j["providerId"] == "sms" and j["counts"] == {"open": 0, "completed": 1, "cancelled": 1, "failed": 1}'
expect sms-transactions.json "{t['transactionId']: t['state'] for t in j['transactions']} == {'$SMS_DONE': 'completed', '$SMS_FAILED': 'failed', '$SMS_CANCELLED': 'cancelled'}"
expect sms-transactions.json "[t.get('lastStatus') for t in j['transactions'] if t['transactionId'] == '$SMS_FAILED'] == [5001]"
expect sms-transactions.json 'all(t.get("userId") for t in j["transactions"] if t["state"] == "completed")'
$LATCH admin custom-providers transactions invitation > invitation-transactions.json
expect invitation-transactions.json 'j["counts"] == {"open": 0, "completed": 1, "cancelled": 0, "failed": 1}'
$LATCH admin custom-providers transactions down > down-transactions.json
expect down-transactions.json 'j["counts"] == {"open": 0, "completed": 1, "cancelled": 0, "failed": 0}'
python3 - <<'EOF'
import json
for name in ("invitation", "sms", "down"):
    counts = json.load(open(f"{name}-transactions.json"))["counts"]
    print(f"{name:>10}: " + ", ".join(f"{state} {counts[state]}" for state in ("open", "completed", "cancelled", "failed")))
EOF

echo "9. A disabled provider is no longer offered to apps; deleting one removes it"
$LATCH admin custom-providers update down --disabled > /dev/null
device offered-after.txt any custom-providers
grep -q '^down' offered-after.txt && fail "a disabled provider is still offered"
$LATCH admin custom-providers delete down
status=0
$LATCH admin custom-providers get down 2> deleted.txt || status=$?
[ "$status" = 1 ] || fail "getting a deleted provider exited $status, not 1"
cat deleted.txt
echo "custom-registration walkthrough done"
