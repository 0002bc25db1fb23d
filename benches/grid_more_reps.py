"""More kernel repetitions for heavy-tailed grid cells (issue 11 asks >= 21 there): run each
cell's flows RUNS more times on the testbed (root) and append the rows to the grid's kernel.csv,
numbered after the cell's existing ones (`mpsched validate --grid` replaces a cell's rows).

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/grid_more_reps.py RUNS CELL [CELL ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from mpsched.study import grid as g

GRID = Path(__file__).resolve().parent.parent / "scenarios" / "validation" / "grid"


def _fail(msg: str) -> None:
    print(msg, file=sys.stderr)
    sys.exit(2)


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        _fail("usage: grid_more_reps.py RUNS CELL [CELL ...] (RUNS: a whole number)")
    runs, ids = int(sys.argv[1]), sys.argv[2:]
    path = GRID / g.CSV_NAME
    by_id = {c.id: c for c in g.cells(GRID)}
    unknown = [c for c in ids if c not in by_id]
    if unknown:
        _fail(f"CELL: not grid cells: {unknown} (ids look like equal/htb/1MiB)")
    order = {c: i for i, c in enumerate(by_id)}
    for cid in ids:
        for _ in range(runs):
            rows = g.read_csv(path)
            n = sum(1 for r in rows if r["cell"] == cid)
            new = g.measure([by_id[cid]], settings="added repetitions")
            for r in new:
                r["repetition"] += n
            g.write_csv(path, sorted(rows + new, key=lambda r: (order.get(r["cell"], len(order)), int(r["repetition"]))))
            print(cid, "now", n + len(new), "flows; new:", sorted(round(r["fct_s"] * 1000) for r in new), flush=True)


if __name__ == "__main__":
    main()
