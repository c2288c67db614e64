"""The parties' rows as the library takes them: `(X, y, names)` from arrays, pandas
DataFrames, data files (`load`) or a Spark or Dask DataFrame's front end (`privlogit.cluster`),
shared by the fit, the study and the Node."""
from __future__ import annotations

import os

import numpy as np

import privlogit._native as _native
from . import cluster
from ._native import DataError, PrivlogitError


def _as_float64(a, ndim, what):
    try:
        arr = np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError) as bad:
        raise DataError(f"{what}: not numbers ({bad})") from None
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


def _frame_columns(frame, label, what):
    """A pandas DataFrame's features, labels and feature names (every column but `label`)."""
    if label is None:
        raise PrivlogitError(f"{what}: a DataFrame needs label= (its 0/1 label column)")
    if isinstance(label, (list, tuple, set, dict)):
        raise PrivlogitError(f"{what}: label= names one column, got {label!r}")
    if label not in frame.columns:
        raise DataError(f"{what}: label column {label!r} not found; the columns are {', '.join(map(str, frame.columns))}")
    names = [str(c) for c in frame.columns if c != label]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"{what}: column {', '.join(map(repr, repeated))} appears more than once")
    columns = [c for c in frame.columns if c != label]
    x = numeric_columns(frame, columns, what)
    y = numeric_columns(frame, [label], what)[:, 0]
    return np.ascontiguousarray(x), np.ascontiguousarray(y), names


def numeric_columns(frame, columns, what):
    """`frame[columns]` as float64, or a `DataError` naming the first column that is not
    numeric and its first bad value."""
    try:
        return frame[columns].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        pass
    for c in columns:
        try:
            frame[c].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as bad:
            raise DataError(f"{what}: column {str(c)!r} is not numeric ({bad})") from None
    raise DataError(f"{what}: the columns are not numeric")


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


def _collected(party):
    """A Spark or Dask DataFrame as a pandas one (its rows in this process); anything else as
    it is."""
    kind = cluster._kind(party)
    if kind == "spark":
        return party.toPandas()
    if kind == "dask":
        return party.compute()
    return party
