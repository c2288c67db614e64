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


ROOT = pathlib.Path(__file__).resolve().parents[2]


def _python_blocks(markdown):
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_readme_python_blocks_run_as_written():
    """Every Python block of the README runs from the clone's root as printed (the README's
    commands are what a newcomer copies first)."""
    blocks = _python_blocks((ROOT / "README.md").read_text())
    assert blocks, "the README has a Python example"
    for code in blocks:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, f"{code}\n{done.stderr}"


def test_readme_install_extra_brings_what_the_example_imports():
    """The README installs `./python[sklearn]`: that extra must bring pandas, which the
    example's `to_frame()` imports."""
    import tomllib

    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    readme = (ROOT / "README.md").read_text()
    extra = re.search(r"pip install '\./python\[(\w+)\]'", readme).group(1)
    wanted = {re.split(r"[<>=]", r)[0] for r in project["optional-dependencies"][extra]}
    if any("to_frame()" in b for b in _python_blocks(readme)):
        assert "pandas" in wanted, wanted
