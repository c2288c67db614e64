"""`fit`, `study` and a study's roles between organizations (`keyholder`, `aggregator`,
`node`): the caller's keywords as the library's settings, with the library's defaults."""
from __future__ import annotations

import os
import warnings

import privlogit._native as _native
from . import cluster
from ._native import PrivlogitError, SettingError
from ._parties import _by_name, _collected, _party
from ._results import _with_arrays


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


class ConvergenceWarning(UserWarning):
    """A fit or a study stopped at `max_iter` without meeting its stopping rule (the command
    line prints the same warning): its coefficients are not the optimum."""


def _warn_unless_converged(result):
    """The command line's warning for a run that stopped at its iteration limit, as a Python
    warning (scikit-learn's `ConvergenceWarning` convention)."""
    if result.get("status") == "max_iterations":
        warnings.warn(f"stopped after {result.get('iterations')} iterations without meeting the stopping rule "
                      "(raise max_iter, or loosen tol / gradient_tol): the coefficients are not the optimum",
                      ConvergenceWarning, stacklevel=3)
    return result


def _party_list(parties, what):
    """`parties` as a list, refusing one party given bare (a path, a DataFrame or an (X, y)
    pair would otherwise be read item by item)."""
    # (X, y) given bare: a 2-D then a 1-D array (two DataFrames in a tuple are two parties).
    bare = isinstance(parties, (str, os.PathLike)) or hasattr(parties, "columns") or (
        isinstance(parties, tuple) and len(parties) == 2
        and getattr(parties[0], "ndim", None) == 2 and getattr(parties[1], "ndim", None) == 1)
    if bare:
        raise PrivlogitError(f"{what}: parties is one party; give a list with one entry per organization, "
                             "e.g. [\"a.csv\", \"b.csv\"] or [(X1, y1), (X2, y2)]")
    try:
        return list(parties)
    except TypeError:
        raise PrivlogitError(f"{what}: parties must be a list (one entry per organization), got "
                             f"{type(parties).__name__}") from None


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
            try:
                out["lambda"] = float(value)
            except (TypeError, ValueError):
                raise SettingError(f"lam: expected a number, got {value!r}") from None
        elif isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            raise SettingError(f"{key}: {value} is out of range")
        elif isinstance(value, (list, tuple)):
            out[key] = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
        else:
            out[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
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
    parties = [_collected(p) for p in _party_list(parties, "fit")]
    arrays = _by_name([_party(p, label, names, f"party {k}", family) for k, p in enumerate(parties, 1)])
    return _warn_unless_converged(_with_arrays(_native.fit(arrays, given)))


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
    if parties is not None:
        parties = _party_list(parties, "study")
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
    return _warn_unless_converged(out)


def keyholder(study_file, identity=None, **settings):
    """Serve as the key holder of the study in `study_file` (`privlogit keyholder`), with this
    party's `identity` (PREFIX of PREFIX.crt and PREFIX.key; or `insecure_plaintext=True`).
    Other settings by their names (`listen`, `state`, `resume`, `deadline`). Blocks until the
    study ends; returns the key holder's counters."""
    return _native.keyholder(os.fspath(study_file), _settings(identity=identity, **settings))


def dealer(study_file, identity=None, **settings):
    """Serve as the optional dealer of masked products of the study in `study_file`
    (`privlogit dealer`: its `[dealer]` table), with this party's `identity`: a third server
    trusted to collude with neither the key holder nor the aggregator, whose correlations
    replace the masked products' Paillier work. Other settings by their names (`listen`,
    `deadline`). Blocks until the study ends."""
    _native.dealer(os.fspath(study_file), _settings(identity=identity, **settings))


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
