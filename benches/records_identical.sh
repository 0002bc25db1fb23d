#!/usr/bin/env bash
# benches/records_identical.sh TREE_A TREE_B: are the records of TREE_A's and TREE_B's simulator
# identical, byte for byte, on the fixed list of runs of benches/records_digest.sh (read its
# header)? Exit 0 when all are; exit 1 naming each run that differs and which of its record
# tables do. Digests are kept in $RECORDS_OUT (default a fresh /tmp/records-identical.* dir).
set -euo pipefail
export LC_ALL=C  # one collation for sort and join
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] || { echo "usage: $0 TREE_A TREE_B" >&2; exit 2; }
for t in "$1" "$2"; do [ -d "$t" ] || { echo "records_identical: no checkout at $t" >&2; exit 2; }; done
work=${RECORDS_OUT:-$(mktemp -d /tmp/records-identical.XXXXXX)}
mkdir -p "$work/configs"
source_dir=$(cd "$here/.." && pwd)
echo "records_identical: configurations from $source_dir -> $work/configs" >&2
make -s -C "$source_dir" setup >&2
(cd "$source_dir" && cargo bench -q -p mpsched-sim --bench scale -- --dump-configs="$work/configs/rust") >&2
(cd "$source_dir" && .venv/bin/python benches/records_digest.py configs "$work/configs" "$work/configs/rust")
# Build both first (one at a time: the machine has 2 cores), then run both at once.
for t in "$1" "$2"; do echo "records_identical: building $t" >&2; make -s -C "$t" setup >&2; done
"$here/records_digest.sh" "$1" "$work/a.txt" "$work/configs" 2>"$work/a.log" &
pa=$!
"$here/records_digest.sh" "$2" "$work/b.txt" "$work/configs" 2>"$work/b.log" &
pb=$!
wait $pa || { echo "records_identical: the run of $1 failed:" >&2; tail -5 "$work/a.log" >&2; exit 2; }
wait $pb || { echo "records_identical: the run of $2 failed:" >&2; tail -5 "$work/b.log" >&2; exit 2; }
if cmp -s "$work/a.txt" "$work/b.txt"; then
  echo "records identical: $(wc -l < "$work/a.txt") runs ($1 vs $2; digests in $work)"
  exit 0
fi
echo "RECORDS DIFFER between $1 and $2 (digests in $work):"
# name seed -> the tables whose digests differ
join -j1 -a1 -a2 -e MISSING -o 0,1.2,2.2 \
  <(awk '{print $1"|"$2"|"$3, $5}' "$work/a.txt.tables" | sort) \
  <(awk '{print $1"|"$2"|"$3, $5}' "$work/b.txt.tables" | sort) \
  | awk '$2 != $3 { split($1, k, "|"); d[k[1] " seed " k[2]] = d[k[1] " seed " k[2]] " " k[3] }
         END { for (r in d) print "  " r ":" d[r] }' | sort
exit 1
