"""The Python examples of scenarios/README.md run as written (in a scratch directory that sees
the repository's scenarios/)."""

from __future__ import annotations

import os
import re

import pytest

from conftest import SCENARIOS, has_core_runner

README = SCENARIOS / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(_blocks()) >= 2


@pytest.mark.skipif(not has_core_runner(), reason="this build of the core has no run_json yet")
def test_the_readme_python_examples_run(tmp_path, monkeypatch):
    (tmp_path / "scenarios").symlink_to(SCENARIOS)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in _blocks():  # in order: the later ones query what the first one wrote
        exec(compile(block, str(README), "exec"), namespace)
    assert os.path.isdir(tmp_path / "results" / "quick")
    assert namespace["res"].flows.height == 12
