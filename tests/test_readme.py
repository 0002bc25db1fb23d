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
