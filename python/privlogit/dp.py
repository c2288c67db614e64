"""Differentially private models from research code: the computation is privlogit's Rust
(`privlogit dp fit`), with the same noise for the same `seed`.

So far: PLR (objective perturbation, stacking paper Algorithm 1) and output perturbation
(Chaudhuri et al.). Rows are scaled to norm at most 1 by their own norm before the model
applies; `predict_proba` does the same.
"""
from __future__ import annotations

import numpy as np

from . import _native

__all__ = ["plr", "output_perturbation", "predict_proba"]


def _fit(X, y, epsilon, lam, method, seed):
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    return np.asarray(_native.dp_linear(X, y, float(epsilon), float(lam), method, seed))


def plr(X, y, epsilon, lam=0.01, seed=None):
    """PLR's coefficients, epsilon-DP for the rows of `X` (0/1 labels `y`). `seed` makes the
    noise reproducible (experiments only, not for release)."""
    return _fit(X, y, epsilon, lam, "plr", seed)


def output_perturbation(X, y, epsilon, lam=0.01, seed=None):
    """Output perturbation's coefficients, epsilon-DP for the rows of `X`."""
    return _fit(X, y, epsilon, lam, "output", seed)


def predict_proba(w, X):
    """P(y = 1) under coefficients `w`, rows scaled to norm 1 as in fitting."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scaled = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    return 1.0 / (1.0 + np.exp(-(scaled @ w)))
