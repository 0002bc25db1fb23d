import subprocess
import sys
from pathlib import Path

import mpsched


def test_core_version_matches_the_cli():
    exe = Path(sys.executable).parent / "mpsched"
    out = subprocess.run([str(exe), "version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == mpsched.__version__
    assert mpsched.__version__.count(".") == 2
