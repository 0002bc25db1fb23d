"""The reproduction studies: `studies` (running a study and comparing our numbers with the
published ones), `metrics` (each study's results reduced to our numbers), `samples` (to every
repetition), `claims` (the papers' claims judged with intervals), `report` and `render` (the
report of `mpsched reproduce`). Their scenarios and
published figures live in `experiments/<study>/` at the repository root."""

from mpsched.experiments.studies import *  # noqa: F401,F403
from mpsched.experiments.studies import __all__  # noqa: F401
