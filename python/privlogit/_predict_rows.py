"""`predict_proba`, `predict` and `load_model`: a fit's, a study's or a DP model applied to
raw rows, as `privlogit predict` applies a model file."""
from __future__ import annotations

import os

import numpy as np

import privlogit._native as _native
from . import dp
from ._native import PrivlogitError
from ._results import _with_arrays


def _mean(model, X):
    if not (hasattr(model, "get") and "names" in model and ("coef" in model or "coefficients" in model)):
        raise PrivlogitError(f"model: expected what fit or study returns, a model read by load_model or a DP model, "
                             f"got {type(model).__name__}")
    mean, scale = model.get("mean"), model.get("scale")
    std = model.get("standardization")
    if mean is None and std:
        mean, scale = std["means"], std["scales"]
    coef = model["coef"] if "coef" in model else model["coefficients"]
    return np.asarray(_native.predict_model(
        list(model["names"]), [float(c) for c in coef], dp._rows(model, X),
        None if mean is None else [float(v) for v in mean],
        None if scale is None else [float(v) for v in scale],
        model.get("family") or "binomial"))


def predict_proba(model, X):
    """P(y = 1) for each row of `X` (raw features) under `model`: the dict `fit` or `study`
    returns, a model file read by `load_model`, or a DP model. A pandas DataFrame's columns are
    matched by name (in any order; a missing or an extra column is refused, named), as
    `privlogit predict` matches a file's; a numpy array must be in the model's column order. A
    standardised model is applied in raw units, with its pooled statistics (`raw_model` of
    `privlogit study --json`). Refused for a Gaussian or Poisson model: use `predict`."""
    if isinstance(model, dp.Model):
        return model.predict_proba(dp._rows(model, X))
    family = model.get("family") if hasattr(model, "get") else None
    family = family or "binomial"
    if family != "binomial":
        raise PrivlogitError(f"predict_proba: a {family} model predicts a mean, not a probability: use privlogit.predict")
    return _mean(model, X)


def predict(model, X):
    """The label's mean for each row of `X` under `model` (as `predict_proba` takes them):
    P(y = 1) for a logistic model or a DP model, the expected count for Poisson, the expected
    value for Gaussian (statsmodels' `predict`; `privlogit predict` writes the same)."""
    if isinstance(model, dp.Model):
        return model.predict_proba(dp._rows(model, X))
    return _mean(model, X)


def load_model(path):
    """The model file at `path`, any kind the project writes: a fit's or a study's JSON (`fit
    --json --out`, `study --json --out`, an aggregator's `--out`, a Python result written by
    its `save(path)`) comes back as the `Result` `fit` and `study` return; a DP release (`dp fit
    --out`) as a `privlogit.dp.Model` whose `features` name its columns. Either goes to
    `predict_proba` and `predict`, which give what `privlogit predict` gives on the same rows."""
    loaded = _native.load_model(os.fspath(path))
    if loaded[0] == "result":
        return _with_arrays(loaded[1])
    model = dp.Model(loaded[1])
    model.features = list(loaded[2])
    return model
