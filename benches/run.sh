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
  cargo bench -q -p mpsched-sim --bench e2e -- --reps=5 2>/dev/null | grep -E '^(\||$)'
  echo
  if [ -n "${HTSIM_SIM:-}" ]; then
    # htsim side by side (benches/htsim/README.md): built from the given htsim `sim` folder,
    # then the two simulators alternate, one at a time, three rounds.
    benches/htsim/build.sh "$HTSIM_SIM" >/dev/null
    echo "### htsim side by side: \`HTSIM_SIM=$HTSIM_SIM make bench\` (CPU s / ns per packet, medians of 21)"
    echo
    for round in 1 2 3; do
      echo "Round $round, $(date -u +%H:%M:%SZ), load $(cut -d' ' -f1 /proc/loadavg):"
      echo
      /tmp/htsim-e2e-build/htsim_e2e --reps=21 | grep '^|'
      echo
      cargo bench -q -p mpsched-sim --bench e2e -- " 10" --reps=21 2>/dev/null | grep '^|'
      echo
    done
  fi
  echo "### One scheduling decision: \`cargo bench -p mpsched-proto --bench sched_decision\`"
  echo
  echo "ns per decision (criterion median) for 2 / 4 / 8 subflows, every registered composition."
  echo
  echo "| scheduler | 2 | 4 | 8 |"
  echo "|---|---|---|---|"
  cargo bench -q -p mpsched-proto --bench sched_decision -- --warm-up-time 0.3 --measurement-time 0.5 \
      --output-format bencher 2>/dev/null \
    | awk '/bench:/ { split($2, p, "/"); v[p[2], p[3]] = $5; if (!(p[2] in seen)) { seen[p[2]] = 1; order[++n] = p[2] } }
           END { for (i = 1; i <= n; i++) { s = order[i]; printf "| %s | %s | %s | %s |\n", s, v[s, 2], v[s, 4], v[s, 8] } }'
  echo
  echo "### Python-defined scheduler: \`.venv/bin/python benches/bench_pysched.py\`"
  echo
  .venv/bin/python benches/bench_pysched.py
  echo
  echo "### Engine: \`cargo bench -p mpsched-engine --bench event_queue\`"
  echo
  echo '```'
  cargo bench -q -p mpsched-engine --bench event_queue -- --output-format bencher 2>/dev/null | grep 'bench:' || true
  echo '```'
} > "$tmp"
cat "$tmp"
cat "$tmp" >> "$out"
echo "appended to $out"
