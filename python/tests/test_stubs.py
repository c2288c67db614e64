"""The type stubs (`privlogit/_native.pyi`) match the extension as built: mypy's stubtest
compares every name, signature and default, and mypy checks the Python layer against them."""
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy")
PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "privlogit"


def test_stubs_match_the_extension(tmp_path):
    # From a directory without the source tree, so the installed package is what is checked.
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "privlogit._native"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_python_layer_type_checks(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports",
                           "--cache-dir", str(tmp_path), str(PACKAGE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
