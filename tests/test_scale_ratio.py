"""benches/scale_ratio.py, the scale targets' ratio with an interval (issue 17), on stand-ins for the
scale binary and the cache probe: the verdict follows the interval, a few rounds give no
interval rather than a false one, and a bad row name is one clear line, not a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benches" / "scale_ratio.py"


def stand_ins(tmp_path: Path, probe_8mib_ns: float = 20.0) -> tuple[Path, Path]:
    """A scale binary whose 'large' row takes 1.4x the 'small' row's CPU time a packet, and a memlat."""
    scale = tmp_path / "scale"
    scale.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  --row=small) echo "1000 0.000100 0.000100 3 1000000" ;;\n'
        '  --row=large) echo "1000 0.000140 0.000140 1 9000000" ;;\n'
        '  *) echo "scale: no row named ${1#--row=}; --row= takes one of: small, large" >&2; exit 2 ;;\n'
        "esac\n"
    )
    memlat_dir = tmp_path / "memlat"
    memlat_dir.mkdir()
    memlat = memlat_dir / "memlat"
    memlat.write_text(f"#!/bin/sh\necho 'load latency ns: 1 MiB 6.5, 8 MiB {probe_8mib_ns}, 128 MiB 170.0'\n")
    for exe in (scale, memlat):
        exe.chmod(0o755)
    return scale, memlat_dir


def run(scale: Path, memlat_dir: Path, *extra: str, small: str = "small:3") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(scale), small, "large:1", "--memlat-dir", str(memlat_dir), *extra],
        capture_output=True, text=True, timeout=60,
    )


def test_a_ratio_over_the_target_in_every_round_is_not_met(tmp_path):
    p = run(*stand_ins(tmp_path), "--rounds", "6", "--target", "1.3")
    assert p.returncode == 0, p.stderr
    rounds = [line for line in p.stdout.splitlines() if re.match(r"\| \d+ \| \d\d:\d\d:\d\d \|", line)]
    assert len(rounds) == 6 and all(line.endswith("| 100.0 | 140.0 | 1.40 |") for line in rounds)
    assert "| all | 6 | 1.40 | 1.40-1.40 | not met (the interval lies over 1.3) |" in p.stdout


def test_the_same_ratio_under_a_looser_target_is_met(tmp_path):
    p = run(*stand_ins(tmp_path), "--rounds", "6", "--target", "1.5")
    assert "| all | 6 | 1.40 | 1.40-1.40 | met (the interval lies at or under 1.5) |" in p.stdout


def test_rounds_on_a_contended_cache_are_kept_apart(tmp_path):
    p = run(*stand_ins(tmp_path, probe_8mib_ns=90.0), "--rounds", "6", "--target", "1.5")
    assert "| all | 6 | 1.40 |" in p.stdout
    assert "| 8 MiB probe <= 30 ns (the L3 was ours) | 0 | – | – | no rounds |" in p.stdout


def test_too_few_rounds_give_no_interval(tmp_path):
    p = run(*stand_ins(tmp_path), "--rounds", "5", "--target", "1.3")
    assert p.returncode == 0, p.stderr
    assert "| all | 5 | 1.40 | – | no interval (fewer than 6 rounds) |" in p.stdout


def test_an_unknown_row_is_one_clear_error(tmp_path):
    p = run(*stand_ins(tmp_path), "--rounds", "2", small="dumbbell 7 flows:3")
    assert p.returncode != 0
    assert "the row 'dumbbell 7 flows' failed: scale: no row named dumbbell 7 flows; --row= takes one of" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_row_without_reps_is_refused_before_running(tmp_path):
    p = run(*stand_ins(tmp_path), small="small")
    assert p.returncode == 2
    assert "write NAME:REPS" in p.stderr and "Traceback" not in p.stderr
