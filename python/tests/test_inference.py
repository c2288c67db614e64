"""Inference at the optimum from Python (issue 29): the same table as the command line.

Reference values: statsmodels 0.15.0's `Logit` on the pooled winequality_red rows, recorded in
tests/references/inference_statsmodels.json (tests/references/inference_statsmodels.py writes
it); statsmodels itself is not needed here. Tolerances are the issue's: 1e-6.
"""
import json
import pathlib

import numpy as np
import pytest

import privlogit

ROOT = pathlib.Path(__file__).resolve().parents[2]
WINE = ROOT.parent / "shared" / "data" / "winequality_red.csv"
REFERENCE = json.loads((ROOT / "tests" / "references" / "inference_statsmodels.json").read_text())


def wine_parties(k):
    X, y, names = privlogit.load(WINE, "good")
    parts = np.array_split(np.arange(len(y)), k)
    return [(X[p], y[p]) for p in parts], names


def test_unpenalised_fit_equals_statsmodels():
    parties, names = wine_parties(3)
    out = privlogit.fit(parties, names=names, lam=0.0, optimizer="newton", gradient_tol=1e-9)
    ref = REFERENCE["wine"]
    assert np.max(np.abs(out["coef"] - ref["coefficients"])) < 1e-6
    assert np.max(np.abs(np.asarray(out["standard_errors"]) / ref["standard_errors"] - 1)) < 1e-6
    assert np.max(np.abs(np.asarray(out["p_values"]) - ref["p_values"])) < 1e-6
    assert abs(out["deviance"] / ref["deviance"] - 1) < 1e-6
    frame = out.to_frame()
    assert list(frame.index) == ["intercept"] + names
    assert np.allclose(frame["std_err"], ref["standard_errors"], rtol=1e-6)
    assert np.allclose(frame["odds_ratio"], np.exp(ref["coefficients"]), rtol=1e-6)
    text = out.summary()
    assert "std err" in text and "volatile_acidity" in text and "odds ratio" in text


def test_likelihood_ratio_test():
    parties, names = wine_parties(3)
    out = privlogit.fit(parties, names=names, lam=0.0, optimizer="newton", gradient_tol=1e-9,
                        drop=["citric_acid", "residual_sugar"])
    ref = REFERENCE["wine_lr"]
    assert abs(out["likelihood_ratio"]["statistic"] - ref["statistic"]) < 1e-6
    assert abs(out["likelihood_ratio"]["p_value"] - ref["p_value"]) < 1e-6
    assert "Likelihood-ratio test" in out.summary()


def test_bad_designs_raise_clear_errors():
    parties, names = wine_parties(2)
    # A column repeated: collinear, named.
    doubled = [(np.column_stack([X, X[:, 0]]), y) for X, y in parties]
    with pytest.raises(privlogit.PrivlogitError, match="linear combination"):
        privlogit.fit(doubled, names=names + ["copy"], lam=0.0)
    with pytest.raises(privlogit.PrivlogitError, match="`ci_level`"):
        privlogit.fit(parties, names=names, ci_level=2.0)
    with pytest.raises(privlogit.PrivlogitError, match="`drop`"):
        privlogit.fit(parties, names=names, lam=1.0, drop=["alcohol"])


def test_secure_study_reports_the_table():
    parties, names = wine_parties(2)
    parties = [(X[:200, :4], y[:200]) for X, y in parties]
    out = privlogit.study(parties, names=names[:4], standardize=True, quiet=True,
                          two_node_disclosure=True)
    plain = privlogit.fit(parties, names=names[:4], standardize=True, optimizer="newton", gradient_tol=1e-9)
    assert out["reveal"] == "standard-errors"
    assert np.max(np.abs(np.asarray(out["standard_errors"]) / plain["standard_errors"] - 1)) < 1e-6
    assert "covariance" not in out
    assert "P>|z|" in out.summary()
    assert out.to_frame().shape == (5, 9)
    only = privlogit.study(parties, names=names[:4], standardize=True, quiet=True, reveal="coefficients",
                           two_node_disclosure=True)
    assert "standard_errors" not in only and only.to_frame().shape == (5, 1)


def test_newton_protocol_needs_no_optimizer_keyword():
    # The default optimiser keyword does not clash with the Newton protocol (its own optimiser).
    parties, names = wine_parties(2)
    parties = [(X[:150, :3], y[:150]) for X, y in parties]
    out = privlogit.study(parties, names=names[:3], protocol="newton", standardize=True, quiet=True,
                          two_node_disclosure=True)
    assert out["optimizer"] == "newton" and out["converged"]
