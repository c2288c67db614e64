"""Gaussian and Poisson models from Python (issue 29): the same fit and study as the command line.

Reference values: statsmodels 0.15.0's `GLM` on tests/references/wine_glm.csv (the wine file with
log_total_sulfur_dioxide), recorded in tests/references/glm_statsmodels.json by
tests/references/glm_statsmodels.py; statsmodels itself is not needed here. Tolerances are the
issue's: 1e-6 (absolute for coefficients, relative for standard errors and deviances).
"""
import json
import pathlib

import numpy as np
import pytest

import privlogit

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "references" / "wine_glm.csv"
REFERENCE = json.loads((ROOT / "tests" / "references" / "glm_statsmodels.json").read_text())


def frames(label, drop, k=3):
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(DATA).drop(columns=drop)
    return [frame.iloc[p].reset_index(drop=True) for p in np.array_split(np.arange(len(frame)), k)]


def check(out, ref):
    assert out["names"] == ref["names"]
    assert np.max(np.abs(out["coef"] - ref["coefficients"])) < 1e-6
    assert np.max(np.abs(np.asarray(out["standard_errors"]) / ref["standard_errors"] - 1)) < 1e-6
    for key in ("deviance", "null_deviance", "aic", "bic"):
        assert abs(out[key] / ref[key] - 1) < 1e-6, key


def test_gaussian_fit_with_offset_and_weights_equals_statsmodels():
    parties = frames("alcohol", ["log_total_sulfur_dioxide"])
    out = privlogit.fit(parties, label="alcohol", family="gaussian", offset="pH", weights="sulphates",
                        lam=0.0, gradient_tol=1e-9)
    ref = REFERENCE["gaussian_offset_weights"]
    check(out, ref)
    assert abs(out["dispersion"] / ref["scale"] - 1) < 1e-6
    frame = out.to_frame()
    assert "odds_ratio" not in frame.columns and "std_err" in frame.columns
    assert "Gaussian GLM" in out.summary() and "Dispersion" in out.summary()


def test_poisson_study_equals_statsmodels():
    parties = frames("free_sulfur_dioxide", ["total_sulfur_dioxide", "log_total_sulfur_dioxide"])
    out = privlogit.study(parties, label="free_sulfur_dioxide", family="poisson", standardize=True,
                          lam=0.0, gradient_tol=1e-9, quiet=True)
    check(out, REFERENCE["poisson_standardized"])
    assert out["protocol"] == "newton" and out["family"] == "poisson"


def test_bad_glm_input_raises_clear_errors():
    # Counts are not 0/1 labels; a count label is refused for the binomial with its row.
    with pytest.raises(privlogit.DataError, match="is not 0 or 1"):
        privlogit.load(DATA, "free_sulfur_dioxide")
    X, y, names = privlogit.load(DATA, "free_sulfur_dioxide", family="poisson")
    assert y.max() > 1
    with pytest.raises(privlogit.PrivlogitError, match="binomial, gaussian, poisson"):
        privlogit.load(DATA, "alcohol", family="logit")
    # Negative counts, from arrays.
    with pytest.raises(privlogit.PrivlogitError, match="is not a count"):
        privlogit.fit([(X, -y)], names=names, family="poisson", lam=0.0)
    with pytest.raises(privlogit.PrivlogitError, match="offset column"):
        privlogit.fit([(X, y)], names=names, family="poisson", offset="nope", lam=0.0)
    with pytest.raises(privlogit.PrivlogitError, match="Newton"):
        privlogit.fit([(X, y)], names=names, family="poisson", optimizer="privlogit")
