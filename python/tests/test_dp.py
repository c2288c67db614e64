"""privlogit.dp against the command line: the same seed gives the same noise, so the same
model as `privlogit dp fit --seed` (exactly: one code path, run from two front ends)."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

import privlogit
from privlogit import dp

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "demo" / "hospital_a.csv"
CLI = ROOT / "target" / "release" / "privlogit"


@pytest.mark.parametrize("method,call", [("plr", dp.plr), ("output", dp.output_perturbation)])
def test_seeded_fit_equals_the_cli(method, call):
    if not CLI.exists():
        pytest.skip("the release binary is built by cargo test --release first")
    X, y, _ = privlogit.load(DATA, "label")
    ours = call(X, y, epsilon=1.0, lam=0.01, seed=7)
    out = subprocess.run(
        [str(CLI), "dp", "fit", "--method", method, "--data", str(DATA), "--label", "label",
         "--epsilon", "1", "--lambda", "0.01", "--seed", "7"],
        check=True, capture_output=True, text=True,
    )
    theirs = np.asarray(json.loads(out.stdout)["model"]["w"])
    assert np.array_equal(ours, theirs)


def test_noise_differs_without_a_seed_and_bad_input_is_refused():
    X, y, _ = privlogit.load(DATA, "label")
    assert not np.array_equal(dp.plr(X, y, 1.0), dp.plr(X, y, 1.0))
    with pytest.raises(ValueError, match="epsilon"):
        dp.plr(X, y, -1.0)
    assert dp.predict_proba(dp.plr(X, y, 1.0, seed=1), X).shape == (len(y),)
