"""A vertical study from Python (`privlogit.study(..., vertical=True)`): the same library call
as `privlogit study --vertical`, checked against the plaintext fit of the joined rows."""
import numpy as np
import pandas as pd
import pytest

import privlogit
from conftest import ROOT

FILES = [ROOT / "data" / "vertical" / f for f in ("outcomes.csv", "imaging.csv", "registry.csv")]
KEEP = 2  # columns kept from each file: the join and the rounds are what is tested


def _kept():
    frames = [pd.read_csv(f) for f in FILES]
    kept = [[c for c in fr.columns if c not in ("id", "label")][:KEEP] for fr in frames]
    dropped = [c for fr, k in zip(frames, kept) for c in fr.columns if c not in ("id", "label", *k)]
    return frames, kept, dropped


# Both runs stop at the same iteration count on purpose (tol=0), so each warns that it did.
@pytest.mark.filterwarnings("ignore::privlogit.ConvergenceWarning")
def test_a_vertical_study_equals_the_fit_of_the_joined_rows():
    frames, kept, dropped = _kept()
    # Both take the same 15 accelerated steps (the secure ones equal the plaintext ones up to the
    # circuit's 2^-30 rounding; the CLI test runs to the optimum).
    out = privlogit.study(FILES, vertical=True, id="id", label="label", standardize=True, tol=0,
                          gradient_tol=0, max_iter=15, exclude=dropped, quiet=True)
    # The pooled reference: the files joined on `id` (398 people are in all three), the
    # labelling file's columns first, as the study orders them.
    joined = frames[0][["id", "label", *kept[0]]]
    for fr, k in zip(frames[1:], kept[1:]):
        joined = joined.merge(fr[["id", *k]], on="id")
    columns = [c for k in kept for c in k]
    # A vertical study never takes Newton's finish (its Nodes deal PrivLogit's rounds only): nor
    # does the reference, so both take the same 15 steps.
    reference = privlogit.fit([(joined[columns].to_numpy(), joined["label"].to_numpy())],
                              standardize=True, tol=0, gradient_tol=0, max_iter=15,
                              newton_finish=False)
    assert out["rows"] == len(joined) == 398
    assert out["names"] == ["intercept", *columns]
    np.testing.assert_allclose(out["coef"], reference["coef"], atol=1e-6, rtol=0)
    assert out["cost"]["aggregator_and_gates"] > 0
    assert [p["rows_held"] for p in out["vertical"]["parties"]] == [len(f) for f in frames]


def test_a_vertical_study_takes_files_only():
    with pytest.raises(privlogit.PrivlogitError, match="file paths"):
        privlogit.study([(np.zeros((3, 1)), np.zeros(3))] * 2, vertical=True, id="id", label="label",
                        quiet=True)
