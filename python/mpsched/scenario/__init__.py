"""What a user writes: the scenario models, their fields and units, sweeps and designs, and the
normalization of one concrete scenario into the core's run configuration.

Layers inside (each module imports only those above it): `units` -> `fields` -> the tables
(`paths`, `connection`, `workload`, `topology`, `record`, `host`) -> `sweep` (lists and `[design]`) ->
`model` (`Scenario`, loading) -> `pages`, `links`, `flows`, `datacenter` -> `network` (the one
topology step) -> `normalize`.
"""

from mpsched.scenario.connection import ConnectionSpec
from mpsched.scenario.fields import MAX_COUNT, ScenarioError, _FieldError, _Sweepable  # noqa: F401 (importable from here as before)
from mpsched.scenario.host import HostDelaySpec
from mpsched.scenario.model import Scenario, load_scenario, loads_scenario
from mpsched.scenario.paths import CrossTrafficSpec, LinkOverride, PathEventSpec, PathSpec, RateStepSpec
from mpsched.scenario.record import RecordSpec
from mpsched.scenario.sweep import DesignSpec
from mpsched.scenario.topology import TopologySpec
from mpsched.scenario.workload import DATACENTER_KINDS, WorkloadSpec

__all__ = [
    "Scenario",
    "PathSpec",
    "LinkOverride",
    "ConnectionSpec",
    "WorkloadSpec",
    "CrossTrafficSpec",
    "PathEventSpec",
    "RecordSpec",
    "HostDelaySpec",
    "RateStepSpec",
    "DesignSpec",
    "TopologySpec",
    "ScenarioError",
    "load_scenario",
    "loads_scenario",
    "DATACENTER_KINDS",
    "MAX_COUNT",
]
