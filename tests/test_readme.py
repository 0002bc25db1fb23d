"""The README's Python examples run as written (a new user copies them first)."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_python_block_of_the_readme_runs(tmp_path, monkeypatch):
    blocks = _python_blocks()
    assert len(blocks) >= 2
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        namespace: dict = {}
        exec(compile(block, "README.md", "exec"), namespace)
    # The first example wrote a study and its figures where it said.
    assert any((tmp_path / "results" / "quick").glob("*/flows.parquet"))
    # plot() with no folder draws into the study's own figures/ and litters nothing else
    assert any((tmp_path / "results" / "quick" / "figures").glob("*.png"))
    assert not (tmp_path / "figures").exists()
    assert os.getcwd() == str(tmp_path)


def _duckdb_line() -> str:
    text = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"`(\.venv/bin/duckdb -c \"[^`]*\")`", text)
    assert m, "the README shows a duckdb command"
    return m.group(1)


def test_the_readme_duckdb_line_runs_on_a_study(tmp_path, fake_engine):
    """`make setup` installs the DuckDB command-line tool (PyPI duckdb-cli); the README's line
    works on a study written where the README says."""
    import shlex
    import shutil
    import subprocess
    import sys

    import mpsched

    duckdb = Path(sys.executable).parent / "duckdb"
    if not duckdb.is_file():
        duckdb = shutil.which("duckdb")
        if duckdb is None:
            import pytest

            pytest.skip("the DuckDB command-line tool is not installed (make setup installs duckdb-cli)")
    mpsched.run(mpsched.Scenario.load(ROOT / "scenarios" / "quick.toml"), tmp_path / "results" / "quick")
    args = shlex.split(_duckdb_line())
    p = subprocess.run([str(duckdb), *args[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "minrtt" in p.stdout and "roundrobin" in p.stdout
