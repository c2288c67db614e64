"""Shared by the tests: where the repository and the release binary are, and a way to run it."""
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = ROOT / "target" / "release" / "privlogit"


@pytest.fixture
def cli():
    """Runs `privlogit ARGS...` (built by `cargo test --release`, which ./scripts/test runs
    first); `ok=False` returns a failed run instead of asserting success."""
    if not CLI.exists():
        pytest.skip("the release binary is built by cargo test --release first")

    def run(*args, ok=True):
        done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True)
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    return run
