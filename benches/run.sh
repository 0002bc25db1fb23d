#!/usr/bin/env bash
# `make bench`: runs the benchmarks and writes their figures, with the date, the commit, the
# machine's load and the commands that produced them, to BENCH_OUT (default:
# results/bench-<UTC time>.md, outside the tracked files). RECORD=1 also appends them to the
# tracked benches/RESULTS.md (what a maintainer does to record a new baseline). Progress goes to
# stderr, one line per step, since the whole takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=$(date -u +%Y%m%dT%H%MZ)
out=${BENCH_OUT:-results/bench-$stamp.md}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
step=0
steps=$([ -n "${HTSIM_SIM:-}" ] && echo 8 || echo 7)
progress() { step=$((step + 1)); echo "[bench $step/$steps $(date -u +%H:%M:%S)] $*" >&2; }
echo "benchmarks -> $out$([ "${RECORD:-}" = 1 ] && echo ' and benches/RESULTS.md'); several minutes" >&2
# The simulator's benchmark programs are built as `make setup` builds the core: with
# profile-guided optimisation, trained on rows no figure compares (tools/pgo_build.sh; PGO=0
# for the plain build). They get their own target directory, so the plain build stays cached.
progress "profile-guided build of the benchmark programs (tools/pgo_build.sh bench)"
pgo_flags=$(tools/pgo_build.sh bench)
sim_target=$([ -n "$pgo_flags" ] && echo target/pgo-use || echo "${CARGO_TARGET_DIR:-target}")
sim_bench() {
  if [ -n "$pgo_flags" ]; then
    CARGO_TARGET_DIR=target/pgo-use RUSTFLAGS="$pgo_flags" cargo bench -q -p mpsched-sim "$@"
  else
    cargo bench -q -p mpsched-sim "$@"
  fi
}
build=$([ -n "$pgo_flags" ] && echo "profile-guided (tools/pgo_build.sh bench)" || echo "plain (no profile)")
{
  echo
  echo "## Simulator run of $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)')"
  echo
  echo "Machine: $(nproc) cores, $(uname -r); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg). Simulator build: $build."
  echo
  echo "### End to end: \`cargo bench -p mpsched-sim --bench e2e -- --reps=5\`"
  echo
  echo "100 Mbit/s, 20 ms one-way, 333-packet drop-tail, TCP cubic (SACK, delayed ACKs, receive"
  echo "window). Packets = every segment the endpoints send (data and ACKs). Reference on this kind"
  echo "of machine (issue 2): ns-3.44 28 k (bulk) / 46 k (short) packets/s; htsim 6.3 M / 1.8 M."
  echo
  progress "end to end (cargo bench -p mpsched-sim --bench e2e; builds first)"
  sim_bench --bench e2e -- --reps=5 2>/dev/null | grep -E '^(\||$)'
  echo
  if [ -n "${HTSIM_SIM:-}" ]; then
    # htsim side by side (benches/htsim/README.md): built from the given htsim `sim` folder,
    # then the two simulators alternate, one at a time, three rounds.
    progress "htsim side by side (HTSIM_SIM=$HTSIM_SIM)"
    benches/htsim/build.sh "$HTSIM_SIM" >/dev/null
    echo "### htsim side by side: \`HTSIM_SIM=$HTSIM_SIM make bench\` (CPU s / ns per packet, medians of 21)"
    echo
    for round in 1 2 3; do
      echo "Round $round, $(date -u +%H:%M:%SZ), load $(cut -d' ' -f1 /proc/loadavg):"
      echo
      /tmp/htsim-e2e-build/htsim_e2e --reps=21 | grep '^|'
      echo
      sim_bench --bench e2e -- " 10" --reps=21 2>/dev/null | grep '^|'
      echo
    done
  fi
  echo "### Core at scale (issue 17): \`cargo bench -p mpsched-sim --bench scale\`"
  echo
  echo "Dumbbell of N concurrent long TCP flows (N x 1 Mbit/s, N x 4 packets of queue, 3 s) and the"
  echo "FatTree k MPTCP permutation (1 s); each row in its own process, one after another (ratios"
  echo "side by side; CPU time of the simulating thread). Instructions: callgrind of the row alone"
  echo "minus its configuration building (\"–\": over ~5 min under callgrind, or no valgrind)."
  [ -n "${SCALE_SKIP_100K:-}" ] && { echo; echo "SCALE_SKIP_100K is set: no 100 000-flow row."; }
  echo
  progress "core at scale (cargo bench -p mpsched-sim --bench scale; its rows below; 100 000 flows take minutes)"
  sim_bench --bench scale 2> >(grep --line-buffered '^\[scale' >&2) | grep -E '^(\||$)'
  echo
  # The scale targets are ratios between rows, and the large rows move with the share of the
  # host's caches other guests leave us: rounds, each with a load-latency probe beside it, and
  # the median ratio with its interval (benches/scale_ratio.py).
  rounds=${SCALE_RATIO_ROUNDS:-6}
  echo "### Scale ratios with the host's cache beside them: \`benches/scale_ratio.py\`, $rounds rounds"
  echo
  progress "scale ratios, $rounds rounds of each pair with a cache probe (benches/scale_ratio.py)"
  scale_bin=$(ls -t "$sim_target"/release/deps/scale-* | grep -v '\.d$' | head -1)
  .venv/bin/python benches/scale_ratio.py "$scale_bin" "dumbbell 100 flows:21" "dumbbell 10000 flows:3" \
    --rounds "$rounds" --target 1.3
  echo
  .venv/bin/python benches/scale_ratio.py "$scale_bin" "FatTree k=4 MPTCP:9" "FatTree k=16 MPTCP:1" \
    --rounds "$rounds" --target 1.5
  echo
  echo "### One scheduling decision: \`cargo bench -p mpsched-proto --bench sched_decision\`"
  echo
  echo "ns per decision (criterion median) for 2 / 4 / 8 subflows, every registered composition."
  echo
  progress "one scheduling decision (cargo bench -p mpsched-proto --bench sched_decision)"
  echo "| scheduler | 2 | 4 | 8 |"
  echo "|---|---|---|---|"
  cargo bench -q -p mpsched-proto --bench sched_decision -- --warm-up-time 0.3 --measurement-time 0.5 \
      --output-format bencher 2>/dev/null \
    | awk '/bench:/ { split($2, p, "/"); v[p[2], p[3]] = $5; if (!(p[2] in seen)) { seen[p[2]] = 1; order[++n] = p[2] } }
           END { for (i = 1; i <= n; i++) { s = order[i]; printf "| %s | %s | %s | %s |\n", s, v[s, 2], v[s, 4], v[s, 8] } }'
  echo
  echo "### Python-defined scheduler: \`.venv/bin/python benches/bench_pysched.py\`"
  echo
  progress "Python-defined scheduler (benches/bench_pysched.py)"
  .venv/bin/python benches/bench_pysched.py
  echo
  echo "### Engine: \`cargo bench -p mpsched-engine --bench event_queue\`"
  echo
  progress "event queue (cargo bench -p mpsched-engine --bench event_queue)"
  echo '```'
  cargo bench -q -p mpsched-engine --bench event_queue -- --output-format bencher 2>/dev/null | grep 'bench:' || true
  echo '```'
} > "$tmp"
cp "$tmp" "$out"
echo "written to $out" >&2
if [ "${RECORD:-}" = 1 ]; then
  cat "$tmp" >> benches/RESULTS.md
  echo "appended to benches/RESULTS.md (RECORD=1)" >&2
fi
