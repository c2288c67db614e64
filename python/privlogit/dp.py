"""Differentially private models from research code: the computation is privlogit's Rust (the
code `privlogit dp fit` runs), so the same `seed` gives the same noise and the same model as
the command line.

Methods (of the stacking and transfer papers the book's dp guide names): `plr` (objective perturbation, stacking paper
Algorithm 1), `output_perturbation` (Chaudhuri et al. 2011), `pst_s`, `pst_f` (stacking
Algorithms 2-3), `plr_fs` (transfer Algorithm 3), `pst_h` (stacking Algorithm 4), `pptl_fs`
(transfer Algorithm 4), `simcomb` (transfer Algorithm 2), `dphtl` (dissertation Algorithm
4) and `dpstgd` (distributed DP deep learning, dissertation Algorithms 1-2). Rows are scaled to norm at most 1 (each by its own norm, or clipped to `row_bound`) before
a model applies; `Model.predict_proba` scales new rows the same way.

Every fit can keep a privacy ledger (the command line's `--ledger` file): pass
`ledger=Ledger(path, budget)`; a fit that would take a data set past the ledger's total raises
`privlogit.BudgetExceeded` before any noise is drawn, and a fit is charged only once it has
succeeded. The ledger knows a data set by its rows (the arrays given, as the command line knows
a file by the rows it reads), so Python and shell fits of one file (`privlogit.load(path)`)
spend from one budget, and rows that are mostly a charged data set's are charged as that one
(with a warning saying so). `dataset=` only names a data set in messages.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np

import privlogit._native as _native

__all__ = [
    "Model", "Ledger", "fit", "plr", "output_perturbation", "pst_s", "pst_f", "plr_fs",
    "pst_h", "pptl_fs", "simcomb", "dphtl", "dpstgd", "sparse_gaussian", "DeepModel", "predict_proba",
]


def _floats(a, what):
    try:
        return np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError) as bad:
        raise _native.DataError(f"{what}: not numbers ({bad})") from None


def _matrix(a, what):
    arr = _floats(a, what)
    if arr.ndim != 2:
        raise _native.PrivlogitError(f"{what}: expected a 2-D array, got {arr.ndim} dimensions")
    return arr


def _vector(a, what):
    arr = _floats(a, what)
    if arr.ndim != 1:
        raise _native.PrivlogitError(f"{what}: expected a 1-D array, got {arr.ndim} dimensions")
    return arr


# A DataFrame's columns by name, for a DP model here and for `privlogit.predict_proba` (kept
# in this module since a DP model is one of the models it reads).
_INTERCEPT = "intercept"


def _features_of(model):
    """The feature names a model reads, in order (a DP model read from a file knows them)."""
    if isinstance(model, Model):
        return model.features
    return [n for n in model["names"] if n != _INTERCEPT]


def _rows(model, X):
    """`X` as float64 rows in the model's column order: a pandas DataFrame's columns are taken
    by name (reordered as the model reads them; a missing or an extra column is refused by
    name), as `privlogit predict` takes a file's; other arrays must already be in that order."""
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        features = _features_of(model)
        if features is None:
            raise _native.PrivlogitError("X: this model does not know its features' names; pass an array in its column order")
        columns = [str(c) for c in X.columns]
        missing = [f for f in features if f not in columns]
        extra = [c for c in columns if c not in features]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"not features of the model: {', '.join(extra)}")
            raise _native.PrivlogitError(f"X: the columns do not match the model's features ({'; '.join(parts)}); "
                                         f"the model reads {', '.join(features)}")
        from ._parties import numeric_columns
        X = numeric_columns(X, [X.columns[columns.index(f)] for f in features], "X")
    return _matrix(X, "X")


class Ledger:
    """A privacy ledger file (JSON, the command line's `--ledger`): each data set may spend at
    most `budget` epsilon over every fit recorded in it. `budget` is needed to create the file
    and must match the stored total afterwards (or be None)."""

    def __init__(self, path, budget=None):
        self.path = os.fspath(path)
        self.budget = None if budget is None else float(budget)

    def spent(self, X, y):
        """Epsilon the data set of rows `X` (labels `y`) has spent: its own, or that of the
        charged data set it shares most of its rows with (0 if never charged)."""
        return _native.ledger_spent(self.path, _matrix(X, "X"), _vector(y, "y"))[1]

    @property
    def total(self):
        """The stored total each data set may spend."""
        return _native.ledger_total(self.path)

    def __repr__(self):
        return f"Ledger({self.path!r}, budget={self.budget!r})"


def _ledger_args(ledger):
    if ledger is None:
        return None, None
    if not isinstance(ledger, Ledger):
        ledger = Ledger(ledger)
    return ledger.path, ledger.budget


class Model:
    """A fitted DP model. `w` is the coefficient vector of a single linear model (PLR, output
    perturbation, SimComb's target), else None; `to_dict()` is the `model` object `privlogit
    dp fit` writes; `predict_proba(X)` is P(y = 1) for each row (new rows scaled as in
    fitting)."""

    def __init__(self, native):
        self._native = native
        # The feature names, when known (a model read by `privlogit.load_model`).
        self.features = None

    @property
    def method(self):
        return self._native.method

    @property
    def w(self):
        w = self._native.w
        return None if w is None else np.asarray(w)

    def to_dict(self):
        return json.loads(self._native.to_json())

    def predict_proba(self, X):
        if self.features is not None and hasattr(X, "columns"):
            X = _rows(self, X)
        return np.asarray(self._native.predict_proba(_matrix(X, "X")))

    def __repr__(self):
        return f"<privlogit.dp.Model {self.method}>"


#: Every option of a DP fit by its keyword (`lam` for `lambda`) with its default (None: unset,
#: its method says what that means): the library's registry of DP options, the same
#: `privlogit dp fit --help` lists.
OPTIONS = dict(_native.defaults("dp"))


def _epsilon(epsilon, non_private):
    """The epsilon the native fit takes: a positive finite number, or infinity for the
    reference without privacy that `non_private=True` asks for (with `epsilon=None`)."""
    if non_private:
        if epsilon is not None:
            raise _native.PrivlogitError(f"epsilon: {epsilon!r} with non_private=True: give epsilon=None (no privacy)")
        return float("inf")
    if epsilon is None:
        raise _native.PrivlogitError("epsilon: None needs non_private=True (a reference without privacy)")
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise _native.PrivlogitError(f"epsilon: expected a number, got {epsilon!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise _native.PrivlogitError(f"epsilon {value}: must be positive and finite "
                                     "(non_private=True with epsilon=None is the reference without privacy)")
    return value


def fit(method, X, y, epsilon, *, source=None, ledger=None, dataset=None, source_dataset=None, non_private=False,
        **options):
    """Fits `method` ("plr", "output", "pst-s", "pst-f", "plr-fs", "pst-h", "pptl-fs",
    "simcomb"), epsilon-DP for the rows of `X` (labels `y` 0/1), as `privlogit dp fit
    --method`. `source=(Xs, ys)` for the transfer methods. `options` are the keys of
    `privlogit.dp.OPTIONS` (the library's registry, with its defaults: lam, source_epsilon,
    source_lam, high_lambda, eta, k, feature_scores, group_importance, combiner, low_fraction,
    row_bound, plr_as_printed, seed, ...); `seed=None` draws the noise from the OS CSPRNG (a
    seed is for reproducible experiments, not for release). An unknown option, and one the
    method would ignore, is refused by name. `epsilon` must be positive and finite;
    `non_private=True` with `epsilon=None` fits the same model without noise (a reference for
    experiments, not a release). A pandas DataFrame `X` names the model's features: its
    `predict_proba` then matches a DataFrame's columns by name."""
    path, budget = _ledger_args(ledger)
    if source is not None:
        source = (_matrix(source[0], "source X"), _vector(source[1], "source y"))
    # A DataFrame's columns name the model's features, so that its predictions match new
    # frames by name, as a model read from a file does.
    features = [str(c) for c in X.columns] if hasattr(X, "columns") else None
    repeated = sorted({f for f in features or [] if features.count(f) > 1})
    if repeated:
        raise _native.DataError(f"X: column {', '.join(map(repr, repeated))} appears more than once")
    native = _native.dp_fit(
        method, _matrix(X, "X"), _vector(y, "y"), _epsilon(epsilon, non_private), source=source,
        ledger=path, budget=budget, dataset=dataset, source_dataset=source_dataset, **options,
    )
    model = Model(native)
    model.features = features
    return model


def plr(X, y, epsilon, **options):
    """PLR (stacking paper Algorithm 1, objective perturbation)."""
    return fit("plr", X, y, epsilon, **options)


def output_perturbation(X, y, epsilon, **options):
    """Output perturbation (Chaudhuri et al. 2011, the sensitivity method)."""
    return fit("output", X, y, epsilon, **options)


def pst_s(X, y, epsilon, **options):
    """PST-S: stacking over K disjoint row subsets (stacking Algorithm 2)."""
    return fit("pst-s", X, y, epsilon, **options)


def pst_f(X, y, epsilon, **options):
    """PST-F: stacking over K feature groups (stacking Algorithm 3)."""
    return fit("pst-f", X, y, epsilon, **options)


def plr_fs(X, y, epsilon, **options):
    """PLR-FS: one PLR per feature group, budget shared by importance (transfer Algorithm 3)."""
    return fit("plr-fs", X, y, epsilon, **options)


def pst_h(X, y, epsilon, source, **options):
    """PST-H: stacking with hypothesis transfer from `source=(Xs, ys)` (stacking Algorithm 4)."""
    return fit("pst-h", X, y, epsilon, source=source, **options)


def pptl_fs(X, y, epsilon, source, **options):
    """PPTL-FS: feature-split transfer from `source` with stacking (transfer Algorithm 4)."""
    return fit("pptl-fs", X, y, epsilon, source=source, **options)


def simcomb(X, y, epsilon, source, **options):
    """SimComb: PLR on `source`, then PLR on the target near it (transfer Algorithm 2)."""
    return fit("simcomb", X, y, epsilon, source=source, **options)


def dphtl(sources, public, X, y, epsilon, *, unlabelled=None, lam=None, lambda_iw=None, sd_floor=None, seed=None, ledger=None,
          source_datasets=None, non_private=False):
    """DPHTL (dissertation Algorithm 4): `sources` is a list of `(Xs, ys)`, one per source
    organization (the first half of its rows trains its DP hypothesis, the second half its DP
    importance weights over `public`); `(X, y)` are the target's few labelled rows and
    `unlabelled` its unlabelled ones (default `X`). Each source spends `epsilon` once (Theorem
    4.3.1). Returns a dict: `coef` (the target's coefficients, rows scaled to norm 1),
    `hypothesis_weights` (eq. 4.1), `prior_mean`, `prior_sd` (eq. 4.2), `kkt_residual`."""
    path, budget = _ledger_args(ledger)
    out = _native.dp_dphtl(
        [(_matrix(sx, f"source {k}: X"), _vector(sy, f"source {k}: y")) for k, (sx, sy) in enumerate(sources)],
        _matrix(public, "public"), _matrix(X, "X"), _vector(y, "y"), _epsilon(epsilon, non_private),
        unlabelled=None if unlabelled is None else _matrix(unlabelled, "unlabelled"),
        lam=None if lam is None else float(lam), lambda_iw=None if lambda_iw is None else float(lambda_iw),
        sd_floor=None if sd_floor is None else float(sd_floor), seed=seed,
        ledger=path, budget=budget, source_datasets=source_datasets,
    )
    for key in ("coef", "hypothesis_weights", "prior_mean", "prior_sd"):
        out[key] = np.asarray(out[key])
    return out


class DeepModel:
    """A network trained by `dpstgd`: `sizes` (inputs first), `parameters` (numpy, in the order
    `privlogit dl` writes them), `spend` (per iteration and in total, by the sound bound and by
    Theorem 3.3.2; None without noise), `traffic` (bytes down and up per participant), and
    `predict_proba(X)`, P(y = 1) per row."""

    def __init__(self, native):
        self._native = native
        # The feature names, when known (a model read by `privlogit.load_model`).
        self.features = None
        self.sizes = list(native.sizes)
        self.parameters = np.asarray(native.parameters)
        self.spend = native.spend
        self.traffic = list(native.traffic)

    def predict_proba(self, X):
        if self.features is not None and hasattr(X, "columns"):
            X = _rows(self, X)
        return np.asarray(self._native.predict_proba(_matrix(X, "X")))

    def __repr__(self):
        return f"<privlogit.dp.DeepModel {self.sizes}>"


_DL = _native.defaults("dl")


def dpstgd(parties, epsilon=None, *, non_private=False, q=_DL["q"], upload_ratio=_DL["upload_ratio"],
           iterations=_DL["iterations"], bound=_DL["bound"], learning_rate=_DL["learning_rate"], exact_upload=False,
           hidden=tuple(_DL["hidden"]), seed=None, init=None, delta=_DL["delta"], budget=None,
           accounting=_DL["accounting"], accept_unsound_accounting=False):
    """DPSTGD (dissertation chapter 3): participants `parties` (a list of `(X, y)`) train one
    ReLU network (`hidden` widths, softmax output) through a parameter server, each step
    uploading `upload_ratio` of the gradient coordinates chosen by Report-Noisy-Top-N with
    Algorithm 2's `epsilon`, as ternary signs of magnitude `bound` (or the noisy values with
    `exact_upload`). All in this process, as `privlogit dl train` (same seed, same
    parameters). `epsilon=None` needs `non_private=True`. With `budget`, a run that would
    spend more (by `accounting`: "sound", the default, or "dissertation", Theorem 3.3.2, which
    is not a privacy bound and decides only with `accept_unsound_accounting=True`) is refused
    before training. `init`: parameters to start from (a previous model's)."""
    native = _native.dpstgd(
        [(_matrix(x, f"participant {k}: X"), _vector(y, f"participant {k}: y")) for k, (x, y) in enumerate(parties)],
        epsilon=None if epsilon is None else float(epsilon), non_private=bool(non_private), q=float(q),
        upload_ratio=float(upload_ratio), iterations=int(iterations), bound=float(bound),
        learning_rate=float(learning_rate), exact_upload=bool(exact_upload), hidden=[int(h) for h in hidden],
        seed=seed, init=None if init is None else [float(v) for v in np.asarray(init).ravel()],
        delta=float(delta), budget=None if budget is None else float(budget), accounting=accounting,
        accept_unsound_accounting=bool(accept_unsound_accounting),
    )
    return DeepModel(native)


_SPARSE = _native.defaults("dl-sparse")


def sparse_gaussian(parties, epsilon=None, *, delta=_SPARSE["delta"], non_private=False, q=_SPARSE["q"],
                    upload_ratio=_DL["upload_ratio"], iterations=None, bound=_SPARSE["bound"],
                    learning_rate=_SPARSE["learning_rate"], hidden=tuple(_DL["hidden"]), seed=None, init=None,
                    budget=None):
    """Distributed DP deep learning with the sparse Gaussian mechanism (the sound variant of
    DPSTGD): participants `parties` (a list of `(X, y)`) train one ReLU network through a
    parameter server; each visit uploads the noisy sum of its minibatch's clipped gradients on
    `upload_ratio` of the parameters (a public selection), the noise set so that each
    participant spends at most `(epsilon, delta)` (RDP, add/remove one row). All in this process,
    as `privlogit dl train` (same seed, same parameters). `iterations=None`: 40 per unit of
    epsilon within 100-600. `epsilon=None` needs `non_private=True`. With `budget`, a run whose
    epsilon would pass it is refused."""
    native = _native.sparse_gaussian(
        [(_matrix(x, f"participant {k}: X"), _vector(y, f"participant {k}: y")) for k, (x, y) in enumerate(parties)],
        epsilon=None if epsilon is None else float(epsilon), non_private=bool(non_private), delta=float(delta),
        q=float(q), upload_ratio=float(upload_ratio), iterations=None if iterations is None else int(iterations),
        bound=float(bound), learning_rate=float(learning_rate), hidden=[int(h) for h in hidden], seed=seed,
        init=None if init is None else [float(v) for v in np.asarray(init).ravel()],
        budget=None if budget is None else float(budget),
    )
    return DeepModel(native)


def predict_proba(w, X):
    """P(y = 1) under coefficients `w` (of PLR, output perturbation or DPHTL), rows scaled to
    norm 1 as in fitting."""
    X = _matrix(X, "X")
    w = _vector(w, "w")
    if not np.all(np.isfinite(X)):
        row, column = map(int, np.argwhere(~np.isfinite(X))[0])
        raise _native.DataError(f"X: row {row + 1}, column {column + 1}: {X[row, column]} is not a finite number")
    if X.shape[1] != w.shape[0]:
        raise _native.DataError(f"X: the rows have {X.shape[1]} columns, w has {w.shape[0]} weights")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scaled = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    return 1.0 / (1.0 + np.exp(-(scaled @ w)))
