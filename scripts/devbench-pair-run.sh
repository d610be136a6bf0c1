#!/usr/bin/env bash
# On the lent machine: two builds from scripts/devbench-pair.sh, alternated in one sitting (issue 31 item 4).
#  1. `latch bench --writer-ceiling` (the SQLite writer saturated in process), PAIRS alternated pairs;
#  2. key sign-in, custom federated sign-in and refresh on all cores, 64 connections, the server each build in turn
#     (one load generator: the after build's), PAIRS alternated pairs;
#  3. the after build pinned to 2, 4 and 8 cores;
#  4. where the cores go: one more key sign-in run of the after build on all cores, its server's threads sampled from
#     /proc (CPU per thread name over 4 s: is the SQLite writer `latch-db-writer` at a full core, or are the cores?).
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
echo "=== threads of the after build's server during key-sign-in, all $(nproc) cores (CPU cores over 4 s, by thread name)"
run timeout 60 "$dir/latch-after" bench --scenarios key-sign-in --duration 10 --connections 64 --max-assertions 100000 \
  > /tmp/lb/threads-bench.txt 2>&1 &
bench=$!
server=""
for _ in $(seq 1 100); do
  server=$(pgrep -n -f "$dir/latch-after serve" || true)   # the bench's own server (timeout and bench are between)
  [ -n "$server" ] && break
  sleep 0.2
done
# Per thread: id, name and utime + stime (fields 14 and 15; the name, field 2, is in parentheses and may hold spaces).
sample() {
  for t in /proc/"$server"/task/*; do
    sed -E "s/^[0-9]+ \((.*)\) [A-Z] (.*)$/${t##*/}|\1|\2/" "$t/stat" 2>/dev/null
  done | awk -F'|' '{ split($3, f, " "); print $1 "|" $2 "|" f[11] + f[12] }'
}
if [ -n "$server" ]; then
  sleep 4   # the fixture is set up and the scenario under way
  sample > /tmp/lb/threads-1.txt
  sleep 4
  sample > /tmp/lb/threads-2.txt
  # By thread name: CPU over the 4 s in cores (100 ticks/s), and the busiest single thread of that name.
  awk -F'|' 'NR == FNR { before[$1] = $3; next }
    { d = $3 - before[$1]; name = $2; sub(/#[0-9]+$/, "#", name)   # NIO-SGLTN-1-#0, #1, … are one group
      sum[name] += d; if (d > top[name]) top[name] = d; n[name]++ }
    END { for (k in sum) printf "%5.2f cores  %-24s %3d threads, busiest %4.2f\n", sum[k] / 400, k, n[k], top[k] / 400 }' \
    /tmp/lb/threads-1.txt /tmp/lb/threads-2.txt | sort -nr | head -12
fi
wait "$bench" || true
grep -E "^key-sign-in " /tmp/lb/threads-bench.txt || tail -3 /tmp/lb/threads-bench.txt
