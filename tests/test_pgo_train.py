"""The profile-guided build's training set (tools/pgo_train.py, run by tools/pgo_build.sh)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _training_module():
    spec = importlib.util.spec_from_file_location("pgo_train", ROOT / "tools" / "pgo_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_training_scenario_exists_and_loads():
    # A renamed scenario would fail the training and leave `make setup` with the plain build.
    from mpsched.scenario import load_scenario
    from mpsched.scenario.sweep import expand

    for rel in _training_module().TRAINING_SCENARIOS:
        assert (ROOT / rel).is_file(), f"{rel} is gone: update tools/pgo_train.py"
        assert expand(load_scenario(ROOT / rel)), rel

