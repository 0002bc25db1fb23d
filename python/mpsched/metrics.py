"""`mpsched.metrics`, as before the package had folders: the metrics of `mpsched.analysis.metrics`."""

from mpsched.analysis.metrics import *  # noqa: F401,F403
from mpsched.analysis.metrics import __all__  # noqa: F401
