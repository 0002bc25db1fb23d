"""benches/scale_cache.py, a scale row's instructions and misses a packet in a fixed cache model
(issue 17), on stand-ins for valgrind and the scale binary: the configuration's build is taken
off, two binaries are compared file by file, and bad input is one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benches" / "scale_cache.py"

# A stand-in for valgrind: writes a cachegrind file of made-up counts (the build's small, the
# run's larger; a binary whose name has "other" misses twice as often beyond L2 in link.rs) and
# runs the binary, whose stdout is the row's line.
VALGRIND = '''#!PYTHON
import subprocess, sys
args = sys.argv[1:]
out = next(a.split("=", 1)[1] for a in args if a.startswith("--cachegrind-out-file="))
assert "--LL=524288,8,64" in args and "--D1=32768,8,64" in args
rest = [a for a in args if not a.startswith("--")]
binary, build = rest[0], "--build-only" in args
# Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw, for link.rs then option.rs.
if build:
    link, option = [100, 0, 0, 50, 10, 0, 20, 0, 0], [10, 0, 0, 5, 0, 0, 0, 0, 0]
else:
    dl = 800 if "other" in binary else 400
    link, option = [1100, 0, 0, 550, 310, dl, 220, 100, 0], [510, 0, 0, 5, 100, 50, 0, 0, 0]
with open(out, "w") as f:
    f.write("desc: I1 cache: 32768 B\\ncmd: x\\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\\n")
    f.write("fl=/work/x/crates/mpsched-engine/src/net/link.rs\\nfn=hop\\n")
    f.write("10 " + " ".join(map(str, link)) + "\\n")
    f.write("fl=/rustc/0abc/library/core/src/option.rs\\nfn=unwrap\\n")
    f.write("7 " + " ".join(map(str, option)) + "\\n")
    f.write("summary: 0\\n")
p = subprocess.run(rest + [a for a in args if a.startswith("--row=") or a.startswith("--reps=") or a == "--build-only"])
sys.exit(p.returncode)
'''

SCALE = """#!/bin/sh
case "$1" in
  "--row=FatTree k=8 MPTCP") ;;
  *) echo "scale: no row named ${1#--row=}; --row= takes one of: FatTree k=8 MPTCP" >&2; exit 2 ;;
esac
case "$2" in
  --build-only) echo "built 128" ;;
  *) echo "100 0.001 0.001 1 1000000" ;;
esac
"""


def stand_ins(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    valgrind = bin_dir / "valgrind"
    valgrind.write_text(VALGRIND.replace("PYTHON", sys.executable))
    scale, other = tmp_path / "scale", tmp_path / "scale-other"
    for exe in (scale, other):
        exe.write_text(SCALE)
    for exe in (valgrind, scale, other):
        exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return scale, other, env


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_a_packets_figures_leave_out_the_build(tmp_path):
    scale, _, env = stand_ins(tmp_path)
    p = run(env, str(scale), "FatTree k=8 MPTCP", "--files", "2")
    assert p.returncode == 0, p.stderr
    # Run less build over 100 hops: instructions (1100 - 100 + 510 - 10) / 100, L1 misses
    # (300 + 100 + 100) / 100, beyond L2 (400 + 50) / 100.
    assert "| instructions | 15.00 |" in p.stdout
    assert "| L1 misses | 5.00 |" in p.stdout
    assert "| beyond L2 | 4.50 |" in p.stdout
    # Files ranked by misses beyond L2, named from crates/ or library/ on.
    link = p.stdout.index("| crates/mpsched-engine/src/net/link.rs | 4.000 | 4.000 |")
    assert link < p.stdout.index("| library/core/src/option.rs | 0.500 | 1.000 |")


def test_two_binaries_are_compared_file_by_file(tmp_path):
    scale, other, env = stand_ins(tmp_path)
    p = run(env, str(scale), "FatTree k=8 MPTCP", "--against", str(other), "--files", "1")
    assert p.returncode == 0, p.stderr
    assert "| beyond L2 | 4.50 | 8.50 | +4.00 (+88.9 %) |" in p.stdout
    assert "| instructions | 15.00 | 15.00 | +0.00 (+0.0 %) |" in p.stdout
    assert "| crates/mpsched-engine/src/net/link.rs | 4.000 | 8.000 | +4.000 |" in p.stdout
    assert "option.rs" not in p.stdout  # one file asked for: the largest difference


def test_an_unknown_row_is_one_line_before_any_long_run(tmp_path):
    scale, _, env = stand_ins(tmp_path)
    p = run(env, str(scale), "FatTree k=9 MPTCP")
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [
        "scale_cache: scale: no row named FatTree k=9 MPTCP; --row= takes one of: FatTree k=8 MPTCP"
    ]
    assert "Cache model" not in p.stdout


def test_without_valgrind_it_says_how_to_get_it(tmp_path):
    scale, _, env = stand_ins(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run({**env, "PATH": str(empty)}, str(scale), "FatTree k=8 MPTCP")
    assert p.returncode != 0
    assert p.stderr.strip() == "scale_cache: valgrind is not installed (Debian: apt-get install valgrind)"


def test_a_negative_count_of_files_is_refused(tmp_path):
    scale, _, env = stand_ins(tmp_path)
    p = run(env, str(scale), "FatTree k=8 MPTCP", "--files", "-2")
    assert p.returncode == 2 and "give how many files to list" in p.stderr
    assert "Traceback" not in p.stderr and "Cache model" not in p.stdout
