"""privlogit: privacy-preserving logistic regression across organizations.

The computation is in Rust (`privlogit._native`, the crates the `privlogit` command is built
from); this layer passes numpy arrays (read in place, not copied) and offers a scikit-learn
estimator. Faults raise `PrivlogitError` (a ValueError) with the command line's message;
`DataError` for a file that cannot be read (file, line, column), `BudgetExceeded` for a DP fit
its ledger refuses.

- `load`, `fit`, `study`: data files, the plaintext distributed fit, the secure study;
- `predict_proba`: a fit's or a study's model applied to raw rows;
- `PrivLogitRegression`: the scikit-learn estimator (needs scikit-learn);
- `privlogit.dp`: the differentially private methods and the privacy ledger;
- `privlogit.paillier`: Paillier keys and numbers, interoperable with python-paillier;
- `privlogit.accounting`: composition, amplification, RDP and zCDP (`privlogit dp account`).
"""
from __future__ import annotations

import numpy as np

from . import _native
from ._native import BudgetExceeded, DataError, PrivlogitError

__all__ = ["load", "fit", "study", "predict_proba", "PrivLogitRegression", "PrivlogitError", "DataError", "BudgetExceeded", "dp", "paillier", "accounting"]


def _as_float64(a, ndim, what):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != ndim:
        raise PrivlogitError(f"{what}: expected a {ndim}-D array, got {arr.ndim} dimensions")
    return arr


def load(path, label):
    """A data file (CSV, privlogit binary table `.plb` or Parquet) read by privlogit's loader, as
    `(X, y, names)`: X float64 (rows x features), y float64 0/1, the feature names. Faults are
    reported with file, line and column, as by the command line."""
    x, shape, y, names = _native.load_table(str(path), label)
    # numpy views the loaded memory in place (no copy); the arrays keep it alive.
    return np.frombuffer(x, dtype=np.float64).reshape(shape), np.frombuffer(y, dtype=np.float64), names


def fit(parties, optimizer="privlogit-accel", lam=1.0, standardize=True, intercept=True, tol=1e-10, max_iter=10_000, gradient_tol=None,
        penalize_intercept=True):
    """Fit l2-regularised logistic regression over `parties`, a list of `(X, y)` (one per
    organization), as the plaintext distributed fit (`privlogit fit`).

    The objective is dissertation eq. 2.10: sum of log-likelihoods minus lam/2 ||beta||^2, the
    intercept included in the penalty unless `penalize_intercept=False` (as scikit-learn and R
    fit it; the command line's `--free-intercept`). The fit stops when the objective's relative change falls
    below `tol` (0: never) or, with `gradient_tol`, when the gradient's norm falls below it (a
    bound on the coefficients' error of `gradient_tol / lam`). Returns a dict: `coef` (numpy, intercept first when
    `intercept`), `names`, `n_iter`, `status`, `objective`, `log_likelihood`, and with
    `standardize` the pooled `mean` and `scale` the coefficients apply to.
    """
    arrays = [(_as_float64(x, 2, f"party {k}: X"), _as_float64(y, 1, f"party {k}: y")) for k, (x, y) in enumerate(parties)]
    out = _native.fit_parties(arrays, optimizer, float(lam), bool(standardize), bool(intercept), float(tol), int(max_iter),
                              None if gradient_tol is None else float(gradient_tol), bool(penalize_intercept))
    out["coef"] = np.asarray(out["coef"])
    for key in ("mean", "scale"):
        if key in out:
            out[key] = np.asarray(out[key])
    return out


def study(parties, protocol="hessian", optimizer="privlogit-accel", lam=1.0, standardize=True, intercept=True, tol=1e-10, max_iter=10_000, gradient_tol=None):
    """The secure study in this process: a key holder, an aggregator and one Node per party of
    `parties` (a list of `(X, y)`), a fresh 2048-bit Paillier key, masked linear algebra;
    `protocol` is "local", "hessian" or "newton". Returns a dict: `coef` (numpy), `names`,
    `n_iter`, `status`, `objective`, `seconds`, `and_gates`, with `standardize` the pooled
    `mean` and `scale` (`predict_proba` applies the model to raw rows), and `cost` (rounds, AND gates of
    each server, bytes between the Center and the Nodes and between the two servers, garbling
    and Paillier seconds, the Center's linear algebra). Same objective as `fit`. With `standardize`,
    the pooled statistics are computed in plaintext here (the `study` command instead
    standardises under encryption).
    """
    arrays = [(_as_float64(x, 2, f"party {k}: X"), _as_float64(y, 1, f"party {k}: y")) for k, (x, y) in enumerate(parties)]
    out = _native.study_parties(arrays, protocol, optimizer, float(lam), bool(standardize), bool(intercept), float(tol), int(max_iter),
                              None if gradient_tol is None else float(gradient_tol))
    out["coef"] = np.asarray(out["coef"])
    for key in ("mean", "scale"):
        if key in out:
            out[key] = np.asarray(out[key])
    return out


def predict_proba(model, X):
    """P(y = 1) for each row of `X` (raw features, in the model's column order) under `model`,
    the dict `fit` or `study` returns (or one with `names`, `coef` and, when standardised,
    `mean` and `scale`): the standardised coefficients are turned into raw units first, as
    `privlogit study --json` reports them under `raw_model`."""
    mean, scale = model.get("mean"), model.get("scale")
    return np.asarray(_native.predict_model(
        list(model["names"]), [float(c) for c in model["coef"]], _as_float64(X, 2, "X"),
        None if mean is None else [float(v) for v in mean],
        None if scale is None else [float(v) for v in scale]))


from . import accounting, dp, paillier  # noqa: E402  (they import this module's names)


def __getattr__(name):
    # The estimator needs scikit-learn, which the rest of the package does not.
    if name == "PrivLogitRegression":
        try:
            from .estimator import PrivLogitRegression
        except ModuleNotFoundError as missing:
            if missing.name != "sklearn":
                raise
            raise ImportError(
                "privlogit.PrivLogitRegression needs scikit-learn: pip install scikit-learn "
                "(or install this package as './python[sklearn]')"
            ) from missing
        return PrivLogitRegression
    raise AttributeError(f"module 'privlogit' has no attribute {name!r}")
