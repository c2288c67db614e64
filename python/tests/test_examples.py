"""The notebook-style example runs as written and reaches its stated result (the secure study
within 1e-6 of scikit-learn on the pooled rows), so the walk-through stays true."""
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "three_hospitals.py"


def test_three_hospitals_example():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    difference = float(re.search(r"secure vs pooled scikit-learn: (\S+)", done.stdout).group(1))
    assert difference < 1e-6
    assert "summed under encryption: 357 (in the clear 357)" in done.stdout
