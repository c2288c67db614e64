"""privlogit: privacy-preserving logistic regression across organizations.

The computation is in Rust (`privlogit._native`, the crates the `privlogit` command is built
from); this layer passes numpy arrays (read in place, not copied) and offers a scikit-learn
estimator. Faults raise `PrivlogitError` (a ValueError) with the command line's message, or
one of its kinds: `DataError` for a file that cannot be read (file, line, column),
`SettingError` for a refused setting, `NetworkError` for a lost party or network (run again or
resume; the command line's exit status 5), `EstimationError` for a model the data cannot
estimate (separated classes, collinear columns), `BudgetExceeded` for a DP fit its ledger
refuses.

- `load`, `fit`, `study`: data files, the plaintext distributed fit, the secure study in this
  process (settings, defaults and checks are the library's, as on the command line);
  `study` and `node` take Spark and Dask DataFrames, summed on their partitions
  (`privlogit.cluster`);
- `keyholder`, `aggregator`, `node`: the roles of a study between organizations, from its
  study file over mutual TLS (a notebook can be a Node with a pandas DataFrame);
- `predict_proba`, `predict`: a fit's or a study's model applied to raw rows (a DataFrame's
  columns by name); `load_model`: any model file the project writes;
- `PrivLogitRegression`: the scikit-learn estimator (needs scikit-learn);
- `privlogit.dp`: the differentially private methods and the privacy ledger;
- `privlogit.paillier`: Paillier keys and numbers, interoperable with python-paillier;
- `privlogit.accounting`: composition, amplification, RDP and zCDP (`privlogit dp account`).
"""
from __future__ import annotations

import json
import os

import numpy as np

from . import _native, cluster
from ._native import BudgetExceeded, DataError, EstimationError, NetworkError, PrivlogitError, SettingError

__all__ = ["Result", "load", "fit", "study", "keyholder", "aggregator", "node", "predict_proba", "predict", "load_model", "PrivLogitRegression", "PrivlogitError", "DataError", "SettingError", "NetworkError", "EstimationError", "BudgetExceeded", "dp", "paillier", "accounting", "cluster"]


def _as_float64(a, ndim, what):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != ndim:
        raise PrivlogitError(f"{what}: expected a {ndim}-D array, got {arr.ndim} dimensions")
    return arr


def load(path, label, family="binomial"):
    """A data file (CSV, privlogit binary table `.plb` or Parquet) read by privlogit's loader, as
    `(X, y, names)`: X float64 (rows x features), y float64 (0/1 for the binomial `family`,
    counts for "poisson", any number for "gaussian"), the feature names. Faults are reported with
    file, line and column, as by the command line."""
    x, shape, y, names = _native.load_table(str(path), label, family)
    # numpy views the loaded memory in place (no copy); the arrays keep it alive.
    return np.frombuffer(x, dtype=np.float64).reshape(shape), np.frombuffer(y, dtype=np.float64), names


# The library's defaults (one definition, `privlogit::settings`): the keywords below show them.
_FIT = _native.defaults("fit")
_STUDY = _native.defaults("study")


class _Default(str):
    """A keyword's default value, told apart (by identity) from the same value given."""


# `study(protocol="newton")` must not clash with the default optimiser (Newton is its own
# protocol), while `optimizer="privlogit-accel"` given with it is refused as on the command line.
_STUDY_OPTIMIZER = _Default(_STUDY["optimizer"])
# Likewise a Gaussian or Poisson model, fitted by Newton, must not clash with the default
# PrivLogit optimiser and protocol when neither was given.
_FIT_OPTIMIZER = _Default(_FIT["optimizer"])
_STUDY_PROTOCOL = _Default(_STUDY["protocol"])
# And what a study reveals: standard errors where they can be had (a vertical study has none).
_STUDY_REVEAL = _Default(_STUDY["reveal"])


def _frame_columns(frame, label, what):
    """A pandas DataFrame's features, labels and feature names (every column but `label`)."""
    if label is None:
        raise PrivlogitError(f"{what}: a DataFrame needs label= (its 0/1 label column)")
    if label not in frame.columns:
        raise DataError(f"{what}: label column {label!r} not found; the columns are {', '.join(map(str, frame.columns))}")
    names = [str(c) for c in frame.columns if c != label]
    try:
        x = frame[[c for c in frame.columns if c != label]].to_numpy(dtype=np.float64)
        y = frame[label].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as bad:
        raise DataError(f"{what}: a column is not numeric ({bad})") from None
    return np.ascontiguousarray(x), np.ascontiguousarray(y), names


def _party(party, label, names, what, family="binomial"):
    """`(X, y, names)` of a party given as `(X, y)`, a pandas DataFrame (with `label`) or a
    data file's path (read by privlogit's loader with `label`); a Spark or Dask DataFrame's
    cluster front end (`privlogit.cluster`), whose sums are computed on its partitions."""
    in_cluster = cluster.partitions(party, label, what, names)
    if in_cluster is not None:
        return in_cluster
    if hasattr(party, "columns") and hasattr(party, "to_numpy"):
        return _frame_columns(party, label, what)
    if isinstance(party, (str, os.PathLike)):
        if label is None:
            raise PrivlogitError(f"{what}: a data file needs label= (its 0/1 label column)")
        x, y, file_names = load(party, label, family)
        return np.ascontiguousarray(x), np.ascontiguousarray(y), file_names
    try:
        x, y = party
    except (TypeError, ValueError):
        raise PrivlogitError(f"{what}: expected (X, y), a pandas DataFrame or a file path") from None
    x, y = _as_float64(x, 2, f"{what}: X"), _as_float64(y, 1, f"{what}: y")
    columns = x.shape[1]
    if names is None:
        names = [f"x{j}" for j in range(1, columns + 1)]
    return x, y, [str(n) for n in names]


def _by_name(arrays):
    """Parties whose features are the first party's in another order, reordered by name (as
    DataFrames are matched); other differences are left for the library to report."""
    if not arrays:
        return arrays
    first = arrays[0].names if isinstance(arrays[0], cluster._Partitions) else arrays[0][2]
    out = [arrays[0]]
    for party in arrays[1:]:
        if isinstance(party, cluster._Partitions):
            if party.names != first and sorted(party.names) == sorted(first):
                party.order_as(first)
            out.append(party)
            continue
        x, y, names = party
        if names != first and sorted(names) == sorted(first) and len(set(names)) == len(names):
            order = [names.index(n) for n in first]
            x, names = np.ascontiguousarray(x[:, order]), list(first)
        out.append((x, y, names))
    return out


def _settings(**given):
    """The keywords a caller gave, as the library's settings (None: not given)."""
    out = {}
    for key, value in given.items():
        if value is None:
            continue
        if key == "intercept":
            out["no_intercept"] = not value
        elif key == "newton_finish":
            out["no_newton_finish"] = not value
        elif key == "penalize_intercept":
            out["free_intercept"] = not value
        elif key == "lam":
            out["lambda"] = float(value)
        elif isinstance(value, (list, tuple)):
            out[key] = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
        else:
            out[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    return out


class Result(dict):
    """A fit's or a study's result: the `--json` fields as a dict (with `coef` and friends as
    numpy arrays), plus the inference table as text (`summary()`, the command line's) and as a
    pandas DataFrame (`to_frame()`)."""

    def __init__(self, text):
        super().__init__(json.loads(text))
        self._text = text

    def summary(self):
        """The table laid out like statsmodels' `summary()`: fit measures, then per coefficient
        the estimate, standard error, z, p-value and interval, and the odds ratios."""
        return _native.summary(self._text)

    def to_frame(self, raw=False):
        """One row per coefficient (index: the names): `coef`, and when the result has them
        `std_err`, `z` (`t` for a Gaussian model), `p_value`, `ci_low`, `ci_high`, for a logistic
        model `odds_ratio`, `or_low`, `or_high`, for a Poisson model `rate_ratio`, `rr_low`,
        `rr_high`. A standardised result's coefficients are per pooled standard deviation of each
        feature; `raw=True` gives the same table per unit of each feature (`raw_units`)."""
        import pandas as pd

        table = self
        if raw:
            if "raw_units" not in self:
                raise PrivlogitError("to_frame(raw=True): this result has no raw-unit table (a standardised "
                                     "fit or study with standard errors has one; an unstandardised one is in raw units already)")
            table = self["raw_units"]
        columns = {"coef": table["coefficients"]}
        if "standard_errors" in table:
            columns.update({
                "std_err": table["standard_errors"],
                # "t" for a Gaussian model (estimated dispersion), as statsmodels names it.
                table.get("statistic", "z"): table["z_values"],
                "p_value": table["p_values"],
                "ci_low": [c[0] for c in table["conf_int"]],
                "ci_high": [c[1] for c in table["conf_int"]],
            })
        for ratio, short in (("odds_ratio", "or"), ("rate_ratio", "rr")):
            if f"{ratio}s" in table:
                # JSON writes a ratio past float range as null: infinity here.
                inf = float("inf")
                columns.update({
                    ratio: [inf if v is None else v for v in table[f"{ratio}s"]],
                    f"{short}_low": [inf if c[0] is None else c[0] for c in table[f"{ratio}_conf_int"]],
                    f"{short}_high": [inf if c[1] is None else c[1] for c in table[f"{ratio}_conf_int"]],
                })
        return pd.DataFrame(columns, index=pd.Index(self["names"], name="name"))


def _with_arrays(text):
    """A result's coefficients (and pooled statistics) as numpy arrays, with the short names
    earlier releases returned (`coef`, `n_iter`, `mean`, `scale`)."""
    out = Result(text)
    out["coef"] = np.asarray(out["coefficients"])
    out["n_iter"] = out["iterations"]
    std = out.get("standardization")
    if std:
        out["mean"], out["scale"] = np.asarray(std["means"]), np.asarray(std["scales"])
    return out


def fit(parties, optimizer=_FIT_OPTIMIZER, lam=_FIT["lambda"], standardize=_FIT["standardize"],
        intercept=not _FIT["no_intercept"], tol=_FIT["tol"], max_iter=_FIT["max_iter"],
        gradient_tol=_FIT["gradient_tol"], penalize_intercept=not _FIT["free_intercept"], *,
        memory=_FIT["memory"], newton_finish=not _FIT["no_newton_finish"], ci_level=_FIT["ci_level"], covariance=_FIT["covariance"], drop=None,
        family=_FIT["family"], offset=None, weights=None, test_party=None, label=None, names=None,
        **settings):
    """Fit l2-regularised logistic regression (or, with `family="gaussian"` or `"poisson"`, that
    generalised linear model, by Newton's method; `offset` and `weights` name columns of the
    parties that are not features) over `parties` (one per organization: `(X, y)`,
    a pandas DataFrame with its `label` column, or a data file), as the plaintext distributed
    fit (`privlogit fit`, with its defaults: they stop where the gradient's norm is below
    `gradient_tol`).

    The objective is dissertation eq. 2.10: sum of log-likelihoods minus lam/2 ||beta||^2, the
    intercept included in the penalty unless `penalize_intercept=False` (as scikit-learn and R
    fit it). Returns `privlogit fit --json`'s fields (`coefficients`, `names`, `iterations`,
    `status`, `objective`, `log_likelihood`, `standardization`, ...) with `coef` (numpy),
    `n_iter` and, when standardised, the pooled `mean` and `scale`; the inference at the optimum
    (`standard_errors`, `z_values`, `p_values`, `conf_int` at `ci_level`, `odds_ratios`,
    `deviance`, `null_deviance`, `aic`, `bic`, `covariance` when asked for). The result's
    `summary()` prints the table, `to_frame()` gives it as a pandas DataFrame. `test_party` (data
    files with the parties' columns) evaluates the final model on held-out rows (`test_auc`,
    `test_log_loss`, `test_accuracy`, `test_brier`, `calibration`). Further settings of
    `privlogit fit` (`separation_probe`, `init`, ...) go by their names.
    """
    if optimizer is _FIT_OPTIMIZER:
        optimizer = None  # not given: the library's default (Newton for Gaussian and Poisson)
    given = _settings(optimizer=optimizer, lam=lam, standardize=standardize, intercept=intercept, tol=tol,
                      max_iter=max_iter, gradient_tol=gradient_tol, penalize_intercept=penalize_intercept, memory=memory,
                      newton_finish=newton_finish, ci_level=ci_level, covariance=covariance, drop=None if drop is None else [str(c) for c in drop],
                      family=family, offset=offset, weights=weights, label=label,
                      test_party=None if test_party is None else [os.fspath(p) for p in test_party],
                      **settings)
    # The plaintext fit holds every party's rows in this process: a Spark or Dask DataFrame is
    # collected (`study` and `node` compute on its partitions instead).
    parties = [_collected(p) for p in parties]
    arrays = _by_name([_party(p, label, names, f"party {k}", family) for k, p in enumerate(parties, 1)])
    return _with_arrays(_native.fit(arrays, given))


def _collected(party):
    """A Spark or Dask DataFrame as a pandas one (its rows in this process); anything else as
    it is."""
    kind = cluster._kind(party)
    if kind == "spark":
        return party.toPandas()
    if kind == "dask":
        return party.compute()
    return party


def study(parties=None, protocol=_STUDY_PROTOCOL, optimizer=_STUDY_OPTIMIZER, lam=_STUDY["lambda"],
          standardize=_STUDY["standardize"], intercept=not _STUDY["no_intercept"], tol=_STUDY["tol"],
          max_iter=_STUDY["max_iter"], gradient_tol=_STUDY["gradient_tol"], *, label=None, names=None,
          study_file=None, key_bits=_STUDY["key_bits"], fixed=_STUDY["fixed"],
          linear_algebra=_STUDY["linear_algebra"], memory=_STUDY["memory"],
          newton_finish=not _STUDY["no_newton_finish"], seed=None, quiet=_STUDY["quiet"],
          reveal=_STUDY_REVEAL, ci_level=_STUDY["ci_level"], covariance=_STUDY["covariance"], **settings):
    """The secure study in this process (`privlogit study`: the same plan, defaults and
    checks): a key holder, an aggregator and one Node per party of `parties` (`(X, y)`,
    pandas DataFrames with their `label` column, or data files), talking over loopback TCP;
    with `standardize` the pooled statistics are computed under encryption. `study_file` reads
    the settings (and `party` files) of a study file; keywords override it. Further settings of
    `privlogit study` (`dp_epsilon`, `penalty_centre`, `noise_seed`, `family`, `offset`,
    `weights`, ...) go by their names.

    Returns `privlogit study --json`'s fields (`coefficients`, `names`, `iterations`, `rounds`,
    `status`, `standardization`, `raw_model`, timings and bytes) with `coef` (numpy), `n_iter`,
    the pooled `mean` and `scale`, and `cost` (rounds, AND gates, bytes, seconds). `reveal`
    chooses what the study reveals beyond the coefficients: "standard-errors" (the default: the
    inference table), "covariance" (the matrix too; `covariance=True` includes it) or
    "coefficients". `summary()` and `to_frame()` as for `fit`.

    `vertical=True, id="COLUMN"`: the parties hold different columns about the same people
    (`privlogit study --vertical`): `parties` are their files, matched by the `id` column, one of
    them with the `label` column. Returns the same fields, `rows` being the intersection's size,
    with `vertical` (each party's place, rows held and columns).
    """
    if optimizer is _STUDY_OPTIMIZER:
        optimizer = None  # not given: the library's default, or Newton's for its protocol
    if protocol is _STUDY_PROTOCOL:
        protocol = None  # not given: the library's default (Newton for Gaussian and Poisson)
    if reveal is _STUDY_REVEAL:
        reveal = None  # not given: the library's default for the study's kind
    given = _settings(protocol=protocol, optimizer=optimizer, lam=lam, standardize=standardize, intercept=intercept,
                      tol=tol, max_iter=max_iter, gradient_tol=gradient_tol, key_bits=key_bits, fixed=fixed,
                      linear_algebra=linear_algebra, memory=memory, newton_finish=newton_finish, seed=seed, quiet=quiet, label=label,
                      reveal=reveal, ci_level=ci_level, covariance=covariance, **settings)
    if settings.get("vertical"):
        # Each party's file, matched by its `id` column (private set intersection).
        if parties is not None:
            if not all(isinstance(p, (str, os.PathLike)) for p in parties):
                raise PrivlogitError("a vertical study reads each party's file (its id column matches the "
                                     "rows): give the parties as file paths")
            given["party"] = [os.fspath(p) for p in parties]
        arrays = None
    else:
        family = settings.get("family", "binomial")
        arrays = None if parties is None else _by_name([_party(p, label, names, f"party {k}", family)
                                                        for k, p in enumerate(parties, 1)])
    try:
        out = _with_arrays(_native.study(arrays, given, None if study_file is None else os.fspath(study_file)))
    finally:
        cluster.released(arrays)
    out["cost"] = {
        "rounds": out["rounds"],
        "aggregator_and_gates": out["and_gates"],
        "bytes_to_nodes": out["bytes_to_nodes"],
        "bytes_from_each_node": out["bytes_from_each_node"],
        "bytes_from_nodes": sum(out["bytes_from_each_node"]),
        "bytes_to_keyholder": out["bytes_aggregator_to_keyholder"],
        "bytes_from_keyholder": out["bytes_keyholder_to_aggregator"],
        "garbling_seconds": out["gc_seconds"],
        "keyholder_paillier_seconds": out["keyholder_paillier_seconds"],
        "node_wait_seconds": out["waiting_for_nodes_seconds"],
        "linear_algebra": out["linear_algebra"],
    }
    return out


def keyholder(study_file, identity=None, **settings):
    """Serve as the key holder of the study in `study_file` (`privlogit keyholder`), with this
    party's `identity` (PREFIX of PREFIX.crt and PREFIX.key; or `insecure_plaintext=True`).
    Other settings by their names (`listen`, `state`, `resume`, `deadline`). Blocks until the
    study ends; returns the key holder's counters."""
    return _native.keyholder(os.fspath(study_file), _settings(identity=identity, **settings))


def aggregator(study_file, identity=None, **settings):
    """Drive the study in `study_file` as its aggregator (`privlogit aggregator`), with this
    party's `identity`; the study's settings come from the file, keywords override them
    (`out=` writes the result). Blocks until the study ends; returns the result as `study`
    does."""
    return _with_arrays(_native.aggregator(os.fspath(study_file), _settings(identity=identity, **settings)))


def node(study_file, identity=None, data=None, *, label=None, names=None, **settings):
    """Take part in the study in `study_file` as a Node (`privlogit node`), with this party's
    `identity` and its `data`: a data file's path, a pandas DataFrame (with its `label`
    column), a Spark or Dask DataFrame (with its `label` column; every sum is computed on its
    partitions, `privlogit.cluster`) or `(X, y)` arrays with the feature `names` (the study's
    other Nodes must have the same columns). Blocks until the study ends; returns the Node's counters."""
    if data is None:
        raise PrivlogitError("node: give data= (a file path, a pandas DataFrame or (X, y))")
    given = _settings(identity=identity, label=label, **settings)
    party = None
    if isinstance(data, (str, os.PathLike)):
        given["party"] = [os.fspath(data)]
    else:
        party = _party(data, label, names, "this Node's data")
    try:
        return _native.node(os.fspath(study_file), given, party)
    finally:
        cluster.released([party])


_INTERCEPT = "intercept"


def _features_of(model):
    """The feature names a model reads, in order (a DP model read from a file knows them)."""
    if isinstance(model, dp.Model):
        return model.features
    return [n for n in model["names"] if n != _INTERCEPT]


def _rows(model, X):
    """`X` as float64 rows in the model's column order: a pandas DataFrame's columns are taken
    by name (reordered as the model reads them; a missing or an extra column is refused by
    name), as `privlogit predict` takes a file's; other arrays must already be in that order."""
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        features = _features_of(model)
        if features is None:
            raise PrivlogitError("X: this model does not know its features' names; pass an array in its column order")
        columns = [str(c) for c in X.columns]
        missing = [f for f in features if f not in columns]
        extra = [c for c in columns if c not in features]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"not features of the model: {', '.join(extra)}")
            raise PrivlogitError(f"X: the columns do not match the model's features ({'; '.join(parts)}); "
                                 f"the model reads {', '.join(features)}")
        try:
            X = X[[X.columns[columns.index(f)] for f in features]].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as bad:
            raise DataError(f"X: a column is not numeric ({bad})") from None
    return _as_float64(X, 2, "X")


def _mean(model, X):
    mean, scale = model.get("mean"), model.get("scale")
    std = model.get("standardization")
    if mean is None and std:
        mean, scale = std["means"], std["scales"]
    coef = model["coef"] if "coef" in model else model["coefficients"]
    return np.asarray(_native.predict_model(
        list(model["names"]), [float(c) for c in coef], _rows(model, X),
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
        return model.predict_proba(_rows(model, X))
    family = model.get("family") or "binomial"
    if family != "binomial":
        raise PrivlogitError(f"predict_proba: a {family} model predicts a mean, not a probability: use privlogit.predict")
    return _mean(model, X)


def predict(model, X):
    """The label's mean for each row of `X` under `model` (as `predict_proba` takes them):
    P(y = 1) for a logistic model or a DP model, the expected count for Poisson, the expected
    value for Gaussian (statsmodels' `predict`; `privlogit predict` writes the same)."""
    if isinstance(model, dp.Model):
        return model.predict_proba(_rows(model, X))
    return _mean(model, X)


def load_model(path):
    """The model file at `path`, any kind the project writes: a fit's or a study's JSON (`fit
    --json --out`, `study --json --out`, an aggregator's `--out`, a Python result saved with
    `json.dump`) comes back as the `Result` `fit` and `study` return; a DP release (`dp fit
    --out`) as a `privlogit.dp.Model` whose `features` name its columns. Either goes to
    `predict_proba` and `predict`, which give what `privlogit predict` gives on the same rows."""
    loaded = _native.load_model(os.fspath(path))
    if loaded[0] == "result":
        return _with_arrays(loaded[1])
    model = dp.Model(loaded[1])
    model.features = list(loaded[2])
    return model


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
