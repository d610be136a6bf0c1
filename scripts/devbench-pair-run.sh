#!/usr/bin/env bash
# On the lent machine: two builds from scripts/devbench-pair.sh, alternated in one sitting (issue 31 item 4).
#  1. `latch bench --writer-ceiling` (the SQLite writer saturated in process), PAIRS alternated pairs;
#  2. key sign-in, custom federated sign-in and refresh on all cores, 64 connections, the server each build in turn
#     (one load generator: the after build's), PAIRS alternated pairs;
#  3. the after build pinned to 2, 4 and 8 cores.
# Env: PAIRS (default 3), DUR (seconds per scenario, default 6), CORES (default "2 4 8"). About 6 minutes on 16 cores.
set -u
mkdir -p /tmp/lb && tar xJf "$(dirname "$0")/pair.tar.xz" -C /tmp/lb
dir=/tmp/lb/bundle
run() { env -i PATH=/usr/bin:/bin HOME=/tmp "$@"; }
S=key-sign-in,fsso-es256,refresh
echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
for pair in $(seq 1 "${PAIRS:-3}"); do
  for build in before after; do
    echo "=== writer ceiling, $build (pair $pair)"
    run timeout 60 "$dir/latch-$build" bench --writer-ceiling --duration 8 2>&1 | grep -v warning | tail -1
  done
done
for pair in $(seq 1 "${PAIRS:-3}"); do
  # Alternate which build goes first.
  if [ $((pair % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for build in $order; do
    echo "=== all $(nproc) cores, server $build (pair $pair)"
    run timeout 150 "$dir/latch-after" bench --scenarios "$S" --duration "${DUR:-6}" --connections 64 --max-assertions 100000 \
      --server-executable "$dir/latch-$build" 2>&1 | grep -E "^(key-sign-in|fsso-es256|refresh) "
  done
done
for c in ${CORES:-2 4 8}; do
  echo "=== cores 0-$((c-1)), after"
  run timeout 150 taskset -c 0-$((c-1)) "$dir/latch-after" bench --scenarios "$S" --duration "${DUR:-6}" --connections 64 \
    --max-assertions 100000 2>&1 | grep -E "^(key-sign-in|fsso-es256|refresh) "
done
