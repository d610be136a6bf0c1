#!/usr/bin/env bash
# Two release builds of `latch` compared in one sitting: each scenario served by one build, then the other, in
# alternating order, under one load generator (the AFTER build's), for PAIRS pairs; then the medians of the rate and of
# the server's CPU per operation (`latch bench`'s "µs CPU/op": comparable where the load generator shares the cores).
# Usage: scripts/bench-pair.sh BEFORE_BINARY AFTER_BINARY [SCENARIOS] [PAIRS] [SECONDS]
#   e.g. git worktree add /tmp/before HEAD~1 && (cd /tmp/before && swift build -c release --product latch)
#        scripts/bench-pair.sh /tmp/before/.build/release/latch .build/release/latch key-sign-in,refresh 4 8
# Extra `latch bench` options go in BENCH_OPTIONS (e.g. "--connections 64": the later value wins); SQLite only, as
# --database needs an empty database for every run. The AFTER build prints the "µs CPU/op" column (this script's
# commit or later); the BEFORE build only serves.
set -euo pipefail
[ $# -ge 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: $0 BEFORE_BINARY AFTER_BINARY [SCENARIOS] [PAIRS] [SECONDS]"; exit 1; }
before=$1 after=$2 scenarios=${3:-key-sign-in,fsso-es256,refresh} pairs=${4:-4} seconds=${5:-8}
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for build in $order; do
    if [ "$build" = before ]; then server=$before; else server=$after; fi
    # shellcheck disable=SC2086 # BENCH_OPTIONS is a list of options
    "$after" bench --server-executable "$server" --scenarios "$scenarios" --duration "$seconds" --connections 32 \
      --max-assertions 60000 ${BENCH_OPTIONS:-} 2>/dev/null \
      | awk -v build="$build" -v pair="$pair" -v names="$scenarios" '
          BEGIN { n = split(names, list, ","); for (i = 1; i <= n; i++) wanted[list[i]] = 1 }
          ($1 in wanted) && $9 ~ /^[0-9]+$/ { printf "%d %-6s %-14s %8d/s %6d µs\n", pair, build, $1, $2, $9 }' \
      | tee -a "$runs"
  done
done
echo
echo "medians over $pairs pairs (rate/s, server µs CPU per operation):"
printf "%-14s %10s %10s %10s %10s\n" scenario "before/s" "after/s" "before µs" "after µs"
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The median of field $3 (4: rate, 5: µs) over the runs of build $2 for scenario $1.
median_of() { awk -v s="$1" -v b="$2" -v f="$3" '$2 == b && $3 == s { sub(/\/s$/, "", $4); print $f }' "$runs" | median; }
for scenario in ${scenarios//,/ }; do
  printf "%-14s %10s %10s %10s %10s\n" "$scenario" "$(median_of "$scenario" before 4)" "$(median_of "$scenario" after 4)" \
    "$(median_of "$scenario" before 5)" "$(median_of "$scenario" after 5)"
done
