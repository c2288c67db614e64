"""privlogit: privacy-preserving logistic regression across organizations.

The computation is in Rust (`privlogit._native`); this layer converts numpy arrays and offers a
scikit-learn style estimator.
"""
from __future__ import annotations

import numpy as np

from . import _native

__all__ = ["load", "fit", "study", "PrivLogitRegression"]


def _as_float64(a, ndim, what):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{what}: expected a {ndim}-D array, got {arr.ndim} dimensions")
    return arr


def load(path, label):
    """A data file (CSV, privlogit binary table `.plb` or Parquet) read by privlogit's loader, as
    `(X, y, names)`: X float64 (rows x features), y float64 0/1, the feature names. Faults are
    reported with file, line and column, as by the command line."""
    x, shape, y, names = _native.load_table(str(path), label)
    # numpy views the loaded memory in place (no copy); the arrays keep it alive.
    return np.frombuffer(x, dtype=np.float64).reshape(shape), np.frombuffer(y, dtype=np.float64), names


def fit(parties, optimizer="privlogit-accel", lam=1.0, standardize=True, intercept=True, tol=1e-10, max_iter=10_000):
    """Fit l2-regularised logistic regression over `parties`, a list of `(X, y)` (one per
    organization), as the plaintext distributed fit (`privlogit fit`).

    The objective is dissertation eq. 2.10: sum of log-likelihoods minus lam/2 ||beta||^2, the
    intercept included in the penalty. Returns a dict: `coef` (numpy, intercept first when
    `intercept`), `names`, `n_iter`, `status`, `objective`, `log_likelihood`, and with
    `standardize` the pooled `mean` and `scale` the coefficients apply to.
    """
    arrays = [(_as_float64(x, 2, f"party {k}: X"), _as_float64(y, 1, f"party {k}: y")) for k, (x, y) in enumerate(parties)]
    out = _native.fit_parties(arrays, optimizer, float(lam), bool(standardize), bool(intercept), float(tol), int(max_iter))
    out["coef"] = np.asarray(out["coef"])
    for key in ("mean", "scale"):
        if key in out:
            out[key] = np.asarray(out[key])
    return out


def study(parties, protocol="hessian", optimizer="privlogit-accel", lam=1.0, standardize=True, intercept=True, tol=1e-10, max_iter=10_000):
    """The secure study in this process: a key holder, an aggregator and one Node per party of
    `parties` (a list of `(X, y)`), a fresh 2048-bit Paillier key, masked linear algebra;
    `protocol` is "local", "hessian" or "newton". Returns a dict: `coef` (numpy), `names`,
    `n_iter`, `status`, `seconds`, `and_gates`. Same objective as `fit`. With `standardize`,
    the pooled statistics are computed in plaintext here (the `study` command instead
    standardises under encryption).
    """
    arrays = [(_as_float64(x, 2, f"party {k}: X"), _as_float64(y, 1, f"party {k}: y")) for k, (x, y) in enumerate(parties)]
    out = _native.study_parties(arrays, protocol, optimizer, float(lam), bool(standardize), bool(intercept), float(tol), int(max_iter))
    out["coef"] = np.asarray(out["coef"])
    return out


class PrivLogitRegression:
    """A scikit-learn style estimator over `privlogit.fit`.

    `C` is scikit-learn's inverse penalty: lam = 1 / C. Unlike scikit-learn's default, the
    intercept is penalised like every coefficient (dissertation eq. 2.10); `LogisticRegression(
    fit_intercept=False)` on `X` with a column of ones prepended is the same model. `groups`
    in `fit` assigns rows to parties (default: one party).

    The default optimizer is Newton's method, which reaches the optimum to rounding. The
    PrivLogit optimizers stop on the objective's relative change (the dissertation's rule), so
    their coefficients are accurate to about the square root of `tol`, not to `tol`.
    """

    def __init__(self, C=1.0, optimizer="newton", tol=1e-10, max_iter=10_000):
        self.C = C
        self.optimizer = optimizer
        self.tol = tol
        self.max_iter = max_iter

    def get_params(self, deep=True):
        return {"C": self.C, "optimizer": self.optimizer, "tol": self.tol, "max_iter": self.max_iter}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X, y, groups=None):
        X = _as_float64(X, 2, "X")
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(f"y: expected two classes, got {len(self.classes_)}")
        y01 = (y == self.classes_[1]).astype(np.float64)
        if groups is None:
            parties = [(X, y01)]
        else:
            groups = np.asarray(groups)
            parties = [(X[groups == g], y01[groups == g]) for g in np.unique(groups)]
        out = fit(parties, self.optimizer, 1.0 / self.C, standardize=False, intercept=True, tol=self.tol, max_iter=self.max_iter)
        self.intercept_ = np.array([out["coef"][0]])
        self.coef_ = out["coef"][1:].reshape(1, -1)
        self.n_iter_ = np.array([out["n_iter"]])
        self.n_features_in_ = X.shape[1]
        return self

    def decision_function(self, X):
        X = _as_float64(X, 2, "X")
        return X @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X):
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
