#!/usr/bin/env bash
# tools/pgo_build.sh module|bench: the core built with profile-guided optimisation (PGO).
#
#   module  the Python module (`maturin develop --profile fast`, what `make setup` installs),
#           trained by tools/pgo_train.py (scenarios users run, not the benchmarks');
#   bench   the benchmark programs of mpsched-sim (`cargo bench --no-run`, what `make bench`
#           runs), trained on three rows of benches/scale.rs that no figure of
#           benches/RESULTS.md compares with htsim (the 100- and 1 000-flow dumbbells at their
#           default share, FatTree k=4); prints the RUSTFLAGS that select that build.
#
# Each does: an instrumented build (its own target directory, so the normal build stays
# cached), the training run, `llvm-profdata merge`, and the build that uses the profile. The
# profile changes only where the compiler puts code (inlining, block order), never what it
# computes: records stay byte-identical (benches/RESULTS.md, Session 15 pgo15). Without
# llvm-profdata (rustup's `llvm-tools` component, installed here when missing) or if the
# training fails, `module` falls back to the plain build, saying so, and `bench` prints nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
[ "$kind" = module ] || [ "$kind" = bench ] || { echo "usage: $0 module|bench" >&2; exit 2; }
root=$PWD
pgo_dir=$root/target/pgo
venv=$root/.venv

say() { echo "pgo ($kind): $*" >&2; }

# llvm-profdata of the compiler's own LLVM (a raw profile's format follows the LLVM version).
profdata_tool() {
  local sysroot host tool
  sysroot=$(rustc --print sysroot) && host=$(rustc -vV | sed -n 's/^host: //p') || return 1
  tool=$sysroot/lib/rustlib/$host/bin/llvm-profdata
  if [ ! -x "$tool" ] && command -v rustup >/dev/null; then
    say "installing rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools >/dev/null 2>&1 || true
  fi
  [ -x "$tool" ] && echo "$tool"
}

# The module's build into the venv (callers prefix RUSTFLAGS / CARGO_TARGET_DIR as needed).
maturin_develop() {
  VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH "$venv/bin/maturin" develop --profile fast --quiet
}

module_pgo() {
  local tool=$1 raw=$pgo_dir/raw-module
  rm -rf "$raw" && mkdir -p "$raw"
  say "1/3 instrumented build (target/pgo-gen)"
  CARGO_TARGET_DIR=$root/target/pgo-gen RUSTFLAGS="-Cprofile-generate=$raw" maturin_develop || return 1
  say "2/3 training (tools/pgo_train.py)"
  LLVM_PROFILE_FILE="$raw/train-%p-%m.profraw" "$venv/bin/python" tools/pgo_train.py || return 1
  "$tool" merge -o "$pgo_dir/module.profdata" "$raw" || return 1
  say "3/3 optimised build"
  RUSTFLAGS="-Cprofile-use=$pgo_dir/module.profdata" maturin_develop || return 1
}

bench_pgo() {
  local tool=$1 raw=$pgo_dir/raw-bench gen_dir=$root/target/pgo-gen scale
  rm -rf "$raw" && mkdir -p "$raw"
  say "instrumented build and training (target/pgo-gen)"
  CARGO_TARGET_DIR=$gen_dir RUSTFLAGS="-Cprofile-generate=$raw" \
    cargo bench -q -p mpsched-sim --bench e2e --bench scale --no-run >&2 || return 1
  scale=$(ls -t "$gen_dir"/release/deps/scale-* | grep -v '\.d$' | head -1)
  for row in "dumbbell 100 flows" "dumbbell 1000 flows" "FatTree k=4 MPTCP"; do
    LLVM_PROFILE_FILE="$raw/train-%p-%m.profraw" SCALE_CALLGRIND=0 "$scale" "--row=$row" --reps=1 >/dev/null || return 1
  done
  "$tool" merge -o "$pgo_dir/bench.profdata" "$raw" || return 1
  echo "-Cprofile-use=$pgo_dir/bench.profdata"
}

if [ "${PGO:-1}" = 0 ]; then
  say "PGO=0: plain build"
  [ "$kind" = module ] && maturin_develop
  exit 0
fi
mkdir -p "$pgo_dir"
if ! tool=$(profdata_tool); then
  say "llvm-profdata not found (rustup component add llvm-tools): plain build"
  [ "$kind" = module ] && maturin_develop
  exit 0
fi
if [ "$kind" = module ]; then
  module_pgo "$tool" || { say "failed: plain build instead"; maturin_develop; }
else
  bench_pgo "$tool" || say "failed: the benchmarks use the plain build"
fi
