#!/usr/bin/env bash
# Byte-identity of the simulator's records (issue 17): a change meant only for speed must leave
# every record of every run identical.
#
#   benches/records_digest.sh TREE OUT [CONFIG_DIR]
#
# builds the checkout TREE (`make -C TREE setup`: its .venv and its compiled core), runs a fixed
# list of configurations through TREE's core (`mpsched.engines.sim.run`, the path of every
# study) and writes one line per run, `name seed sha256`, to OUT (and `name seed table rows
# sha256` per record table to OUT.tables). The digest covers every value of every table the core
# returns (flows, subflows, links, the time series, actions, blocks, ...) and the run counters
# packets_sent / packet_hops / end_ns; see benches/records_digest.py.
#
# The configurations are made once, by THIS checkout (the one holding this script), so two trees
# are always given the same input: the end-to-end scenarios of crates/mpsched-sim/benches/e2e.rs
# ((1) bulk, (2) 1000 and (3) 10 000 short flows, FatTree k=4 TCP and MPTCP) and the smallest
# rows of benches/scale.rs (dumbbell of 100 long flows, FatTree k=4 MPTCP), dumped as JSON by
# `cargo bench --bench scale -- --dump-configs`; and up to four runs of every scenario file of
# scenarios/ (validation, its grid cells, datacenter, workloads, resilience, quick.toml, ...),
# normalized by this checkout's Python; each with seeds 1 and 2; plus one run with a
# Python-defined scheduler. Several use the host_delay model (the validation scenarios).
# CONFIG_DIR reuses configurations made before (records_identical.sh does so for both trees).
#
#   benches/records_identical.sh TREE_A TREE_B
#
# runs both and compares: exit 0 when every run is identical, exit 1 naming each run (and its
# tables) that differs. About 2.5-3 minutes per tree at load 15 on 2 cores (both trees run at
# once), plus the builds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 TREE OUT [CONFIG_DIR]" >&2; exit 2; }
tree=$(cd "$1" && pwd) || { echo "records_digest: no checkout at $1" >&2; exit 2; }
out=$2
configs=${3:-}

make_configs() { # DIR: the configurations, made by this checkout
  local dir=$1
  echo "records_digest: configurations from $here" >&2
  make -s -C "$here" setup >&2
  (cd "$here" && cargo bench -q -p mpsched-sim --bench scale -- --dump-configs="$dir/rust") >&2
  (cd "$here" && .venv/bin/python benches/records_digest.py configs "$dir" "$dir/rust")
}

if [ -z "$configs" ]; then
  configs=$(mktemp -d /tmp/records-digest-configs.XXXXXX)
  trap 'rm -rf "$configs"' EXIT
  make_configs "$configs"
fi
echo "records_digest: building $tree" >&2
make -s -C "$tree" setup >&2
(cd "$tree" && RECORDS_DIGEST_TREE="$tree" .venv/bin/python "$here/benches/records_digest.py" run "$configs" "$out")
