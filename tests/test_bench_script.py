"""`make bench` (benches/run.sh) on a stand-in repository whose `cargo` and Python only print a
table row: it says what it does as it goes, writes where BENCH_OUT says, and leaves the tracked
benches/RESULTS.md alone unless RECORD=1 (issue 13: it was silent for 13 minutes and left the
clone modified)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    (repo / "benches").mkdir(parents=True)
    shutil.copy(ROOT / "benches" / "run.sh", repo / "benches" / "run.sh")
    (repo / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "pgo_build.sh", repo / "tools" / "pgo_build.sh")
    (repo / "benches" / "RESULTS.md").write_text("# recorded\n")
    # What `cargo bench --bench scale` leaves behind; the ratio step runs it through the stand-in Python.
    (repo / "target" / "release" / "deps").mkdir(parents=True)
    (repo / "target" / "release" / "deps" / "scale-0").write_text("")
    (repo / ".venv" / "bin").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for exe, body in ((repo / ".venv" / "bin" / "python", "echo '| py | 1 |'"),
                      (bin_dir / "cargo", "echo '| bench | 1 |'; echo 'x bench: 1 ns/iter'")):
        exe.write_text(f"#!/bin/sh\n{body}\n")
        exe.chmod(0o755)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("HTSIM_SIM", None)
    env["PGO"] = "0"  # the stand-in cargo builds nothing to train
    env.pop("RECORD", None)
    return repo, env


def test_bench_writes_where_asked_and_leaves_tracked_files_alone(fake_repo, tmp_path):
    repo, env = fake_repo
    out = tmp_path / "my-bench.md"
    p = subprocess.run(["bash", "benches/run.sh"], cwd=repo, env={**env, "BENCH_OUT": str(out)},
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    steps = re.findall(r"\[bench (\d+)/(\d+) ", p.stderr)
    assert steps and all(total == steps[0][1] for _, total in steps)  # one total throughout
    assert [int(n) for n, _ in steps] == list(range(1, int(steps[0][1]) + 1))  # and it is the count
    assert f"written to {out}" in p.stderr
    assert "scale ratios" in p.stderr and "Scale ratios with the host's cache beside them" in out.read_text()
    assert "## Simulator run of" in out.read_text() and "| bench | 1 |" in out.read_text()
    assert "Simulator build: plain (no profile)" in out.read_text()
    assert (repo / "benches" / "RESULTS.md").read_text() == "# recorded\n"
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert status == ""


def test_bench_default_output_is_under_results_and_record_appends(fake_repo):
    repo, env = fake_repo
    p = subprocess.run(["bash", "benches/run.sh"], cwd=repo, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert len(list((repo / "results").glob("bench-*.md"))) == 1
    assert (repo / "benches" / "RESULTS.md").read_text() == "# recorded\n"
    p = subprocess.run(["bash", "benches/run.sh"], cwd=repo, env={**env, "RECORD": "1"}, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    recorded = (repo / "benches" / "RESULTS.md").read_text()
    assert recorded.startswith("# recorded\n") and "## Simulator run of" in recorded
