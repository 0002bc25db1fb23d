#!/usr/bin/env bash
# `make bench`: runs the benchmarks and appends their figures to benches/RESULTS.md, with the
# date, the commit, the machine's load and the commands that produced them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=benches/RESULTS.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo
  echo "## Simulator run of $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)')"
  echo
  echo "Machine: $(nproc) cores, $(uname -r); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "### End to end: \`cargo bench -p mpsched-sim --bench e2e -- --reps=5\`"
  echo
  echo "100 Mbit/s, 20 ms one-way, 333-packet drop-tail, TCP cubic (SACK, delayed ACKs, receive"
  echo "window). Packets = every segment the endpoints send (data and ACKs). Reference on this kind"
  echo "of machine (issue 2): ns-3.44 28 k (bulk) / 46 k (short) packets/s; htsim 6.3 M / 1.8 M."
  echo
  cargo bench -q -p mpsched-sim --bench e2e -- --reps=5 2>/dev/null | grep '^|'
  echo
  echo "### One scheduling decision: \`cargo bench -p mpsched-proto --bench sched_decision\`"
  echo
  echo '```'
  cargo bench -q -p mpsched-proto --bench sched_decision -- --warm-up-time 0.5 --measurement-time 1 2>/dev/null \
    | grep -E '^[a-z0-9_+/ -]+$|time:' | paste - - | awk '{$1=$1; print}' || true
  echo '```'
  echo
  echo "### Python-defined scheduler: \`.venv/bin/python benches/bench_pysched.py\`"
  echo
  .venv/bin/python benches/bench_pysched.py
  echo
  echo "### Engine: \`cargo bench -p mpsched-engine --bench event_queue\`"
  echo
  echo '```'
  cargo bench -q -p mpsched-engine --bench event_queue 2>/dev/null | grep -E 'time:' || true
  echo '```'
} > "$tmp"
cat "$tmp"
cat "$tmp" >> "$out"
echo "appended to $out"
