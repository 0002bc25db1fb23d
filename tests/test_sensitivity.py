"""Sensitivity runs (`experiments/<study>/sensitivity/`, `mpsched reproduce STUDY --sensitivity`):
every file is a valid scenario that changes what it says it changes, and a run reduces to the
study's headline numbers per swept value and scheduler."""

from __future__ import annotations

import tomllib

import polars as pl
import pytest
from typer.testing import CliRunner

from mpsched import experiments as ex
from mpsched.cli import app
from mpsched.experiments.sensitivity import HEADLINES, headline, sensitivity_files


def test_every_study_with_sensitivity_runs_has_a_reference_and_a_headline():
    for name in HEADLINES:
        files = sensitivity_files(name)
        assert files and files[0].stem == "baseline", name
        assert len(files) >= 3, f"{name}: a reference and at least two assumptions"
        readme = (ex.ROOT / name / "README.md").read_text()
        setup = [s for s in ex.load_published(name).get("setup", []) if s.get("sensitivity")]
        for f in files[1:]:
            if f.stem == "series":  # the root cause's evidence, not an assumption
                continue
            # each assumption's result is written down in the README and in published.toml
            assert f"sensitivity/{f.name}" in readme, f"{name}: README says nothing of {f.name}"
            assert any(f"sensitivity/{f.name}" in s["sensitivity"] for s in setup), f"{name}: no [[setup]] for {f.name}"


def test_a_sensitivity_run_gives_the_headline_per_swept_value_and_scheduler(tmp_path):
    """The receive-buffer file of the application-delay study, cut to 3 s: one row per buffer
    size and metric, one column per scheduler, and delays that are positive numbers."""
    from mpsched.scenario import Scenario
    from mpsched.study import run

    f = ex.ROOT / "paasch_app_delay" / "sensitivity" / "rcv_buf.toml"
    data = tomllib.loads(f.read_text())
    data.update(duration="3s")
    data["workload"]["stop"] = "2.5s"
    res = run(Scenario.from_dict(data, base_dir=f.parent), tmp_path / "r", jobs=1)
    h = headline("paasch_app_delay", res)
    assert set(h["setting"]) == {"rcv_buf=64KiB", "rcv_buf=256KiB"}
    assert set(h["metric"]) == {"delay_mean_ms", "variation_ms"}
    assert set(data["connection"]["scheduler"]) <= set(h.columns)
    delays = h.filter(pl.col("metric") == "delay_mean_ms").select(data["connection"]["scheduler"])
    assert all(v > 0 for row in delays.iter_rows() for v in row)


def test_a_study_without_sensitivity_runs_is_refused_with_the_list():
    r = CliRunner().invoke(app, ["reproduce", "datacenter_short_flows", "--sensitivity"])
    assert r.exit_code == 2 and "paasch_app_delay" in r.output


def test_reproduce_sensitivity_prints_each_files_headline(tmp_path, monkeypatch):
    """`mpsched reproduce STUDY --sensitivity -o DIR`: each file runs into DIR/sensitivity/<stem>/
    and its table names the swept values and the metrics (one file here, cut to 3 s)."""
    import tomli_w

    from mpsched.experiments import sensitivity as sens

    data = tomllib.loads((ex.ROOT / "paasch_app_delay" / "sensitivity" / "cc.toml").read_text())
    data.update(duration="3s")
    data["workload"]["stop"] = "2.5s"
    f = tmp_path / "cc.toml"
    f.write_text(tomli_w.dumps(data))
    monkeypatch.setattr(sens, "sensitivity_files", lambda name: [f])
    r = CliRunner().invoke(app, ["reproduce", "paasch_app_delay", "--sensitivity", "-o", str(tmp_path / "out"), "-j", "1"],
                           env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "cc=reno" in r.output and "cc=lia" in r.output and "delay_mean_ms" in r.output
    assert (tmp_path / "out" / "sensitivity" / "cc").is_dir()
