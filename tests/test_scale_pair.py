"""benches/scale_pair.py, two scale binaries on one row at once with a ratio and an interval (issue
17), on stand-ins for the scale binary: the verdict follows the interval, the two runs of a round
share the moment but not the CPU, and bad input is one clear line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benches" / "scale_pair.py"


def stand_in(tmp_path: Path, name: str, cpu_seconds: str) -> Path:
    """A scale binary whose one row, 'row', takes `cpu_seconds` for 1000 packets; each run
    appends the CPUs it may use to `<name>.cpus`."""
    scale = tmp_path / name
    scale.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --row=row) ;;\n"
        '  *) echo "scale: no row named ${1#--row=}; --row= takes one of: row" >&2; exit 2 ;;\n'
        "esac\n"
        '[ "$2" = --build-only ] && exit 0\n'
        f"grep Cpus_allowed_list /proc/self/status | cut -f2 >> {tmp_path / (name + '.cpus')}\n"
        f'echo "1000 {cpu_seconds} {cpu_seconds} 1 1000000"\n'
    )
    scale.chmod(0o755)
    return scale


def run(a: Path, b: Path, *extra: str, row: str = "row") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b), row, *extra],
                          capture_output=True, text=True, timeout=60)


def summary(stdout: str) -> str:
    return [line for line in stdout.splitlines() if line.startswith("| row |")][-1]


two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="running at once takes two CPUs")


@two_cpus
def test_a_faster_b_is_a_verdict_and_each_round_swaps_the_cpus(tmp_path):
    a, b = stand_in(tmp_path, "a", "0.000100"), stand_in(tmp_path, "b", "0.000090")
    p = run(a, b, "--rounds", "6")
    assert p.returncode == 0, p.stderr
    rounds = [line for line in p.stdout.splitlines() if re.match(r"\| \d+ \| \d\d:\d\d:\d\d \|", line)]
    assert len(rounds) == 6 and all(line.endswith("| 100.0 | 90.0 | 0.900 |") for line in rounds)
    assert summary(p.stdout) == "| row | 6 | 100.0 | 90.0 | 0.900 | 0.900-0.900 | B faster (the interval lies under 1) |"
    cpus_a = (tmp_path / "a.cpus").read_text().split()
    cpus_b = (tmp_path / "b.cpus").read_text().split()
    # One CPU each, never the same one in a round, and A not always on the same one.
    assert len(cpus_a) == len(cpus_b) == 6
    assert all(x != y and "," not in x + y and "-" not in x + y for x, y in zip(cpus_a, cpus_b))
    assert len(set(cpus_a)) == 2


@two_cpus
def test_a_binary_against_itself_is_a_tie(tmp_path):
    a = stand_in(tmp_path, "a", "0.000100")
    p = run(a, a, "--rounds", "6")
    assert summary(p.stdout).endswith("| 1.000 | 1.000-1.000 | a tie (the interval contains 1) |")


def test_serial_runs_need_no_second_cpu_and_too_few_rounds_give_no_interval(tmp_path):
    a, b = stand_in(tmp_path, "a", "0.000100"), stand_in(tmp_path, "b", "0.000120")
    p = run(a, b, "--rounds", "3", "--serial")
    assert p.returncode == 0, p.stderr
    assert "A and B one after the other" in p.stdout
    assert summary(p.stdout) == "| row | 3 | 100.0 | 120.0 | 1.200 | – | no interval (fewer than 6 rounds) |"


def test_serial_a_a_times_each_run_of_the_round(tmp_path):
    # Each run of this stand-in is 10 us slower than the one before: A/A in series must show the
    # two runs of a round (first 100 then 110 us, then B first: 120, A 130), not one run twice.
    counter = tmp_path / "runs"
    a = tmp_path / "a"
    a.write_text(
        "#!/bin/sh\n"
        '[ "$2" = --build-only ] && exit 0\n'
        f"echo x >> {counter}\n"
        f'n=$(wc -l < {counter})\n'
        'echo "1000 0.000$((90 + 10 * n)) 0.0001 1 1000000"\n'
    )
    a.chmod(0o755)
    p = run(a, a, "--rounds", "2", "--serial")
    assert p.returncode == 0, p.stderr
    rounds = [line for line in p.stdout.splitlines() if re.match(r"\| \d+ \| \d\d:\d\d:\d\d \|", line)]
    assert [line.split(" | ", 2)[2] for line in rounds] == ["100.0 | 110.0 | 1.100 |", "130.0 | 120.0 | 0.923 |"]


def test_an_unknown_row_is_one_clear_error_before_any_run(tmp_path):
    a = stand_in(tmp_path, "a", "0.000100")
    p = run(a, a, row="FatTree k=5 MPTCP")
    assert p.returncode != 0
    assert p.stderr.strip() == (
        "scale_pair: scale: no row named FatTree k=5 MPTCP; --row= takes one of: row"
    )
    assert not (tmp_path / "a.cpus").exists()


def test_a_missing_binary_or_a_failing_run_is_one_line(tmp_path):
    a = stand_in(tmp_path, "a", "0.000100")
    p = run(a, tmp_path / "nothing", "--rounds", "2")
    assert p.returncode != 0 and "B, " in p.stderr and "is not an executable scale bench binary" in p.stderr
    broken = tmp_path / "broken"
    broken.write_text('#!/bin/sh\n[ "$2" = --build-only ] && exit 0\necho "thread main panicked: out of memory" >&2\nexit 101\n')
    broken.chmod(0o755)
    p = run(a, broken, "--rounds", "2", "--serial")
    assert p.returncode != 0
    assert p.stderr.strip() == f"scale_pair: {broken} failed on the row 'row': thread main panicked: out of memory"
    assert "Traceback" not in p.stderr
