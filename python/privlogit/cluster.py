"""A Node whose rows live in a Spark or Dask cluster.

`privlogit.node(study_file, data=frame, label=...)` and `privlogit.study([...])` take a PySpark
DataFrame or a Dask DataFrame as a party's rows. The rows stay where they are: every sum the
study asks of the Node (moments, the bound, gradients, the information at the optimum, counts)
is computed per partition on the executors or workers by privlogit's own kernels
(`_native.partition_answer`, on Arrow batches for Spark with `mapInArrow`, on pandas partitions
for Dask) and only the partitions' partial sums come back to this process, which keeps the
protocol (keys, encryption, messages) and combines them.

Sums are formed over fixed blocks of rows counted from the DataFrame's first row, as for a data
file, so the same rows in the same order give the same sums bit for bit whatever the
partitioning (`repartition` shuffles rows: then they agree to the accumulators' rounding).

Executors and workers need privlogit installed (the same version) and, for Spark, the driver's
Python (`PYSPARK_PYTHON`); Spark needs Java 17. Both engines are optional extras
(`pip install './python[spark]'`, `'./python[dask]'`).
"""
from __future__ import annotations

import warnings

import numpy as np

import privlogit._native as _native
from ._native import DataError, PrivlogitError

__all__ = ["partitions", "sums", "SparkPartitions", "DaskPartitions"]


def _kind(frame):
    """"spark", "dask" or None, from the frame's class (without importing either engine)."""
    module = type(frame).__module__ or ""
    if module.startswith("pyspark.sql") and type(frame).__name__ == "DataFrame":
        return "spark"
    if module.startswith("dask") and type(frame).__name__ == "DataFrame":
        return "dask"
    return None


def partitions(frame, label, what, names=None):
    """The cluster front end of a Spark or Dask DataFrame `frame` (features: `names`, or every
    column but `label`, in the frame's order), or None for anything else."""
    kind = _kind(frame)
    if kind is None:
        return None
    if label is None:
        raise PrivlogitError(f"{what}: a DataFrame needs label= (its label column)")
    columns = [str(c) for c in frame.columns]
    if label not in columns:
        raise DataError(f"{what}: label column {label!r} not found; the columns are {', '.join(columns)}")
    features = [c for c in columns if c != label] if names is None else [str(n) for n in names]
    missing = [c for c in features if c not in columns]
    if missing:
        raise DataError(f"{what}: no column {', '.join(map(repr, missing))}; the columns are {', '.join(columns)}")
    if kind == "spark":
        return SparkPartitions(frame, label, features, what)
    return DaskPartitions(frame, label, features, what)


def sums(data, kind, beta=None, label=None, names=None):
    """One round's sums of a Node over raw rows (no intercept, no standardisation): `data` a
    Spark or Dask DataFrame (summed on its partitions) or a data file; `kind` "gradient" or
    "information" (at `beta`), "bound", "moments" or "classes". The sums do not depend on how
    the rows are partitioned (bit for bit); what `benches/cluster_node.py` times."""
    front = data if isinstance(data, _Partitions) else partitions(data, label, "data", names)
    return np.asarray(_native.row_sums(front if front is not None else str(data), kind,
                                       None if beta is None else [float(b) for b in beta], label))


class _Partitions:
    """What the native Node reads: `rows`, `names` (the features, then the label's column is
    handed over separately), `describe`, and `run(request) -> [answer per partition]`."""

    _privlogit_partitions = True

    def __init__(self, label, names, what):
        self.label = label
        self.names = list(names)
        self.what = what
        self.rows = 0
        self.offsets = []
        self.describe = what

    def release(self):
        """Frees what the front end pinned in the cluster (nothing for Dask)."""

    def order_as(self, names):
        """The same rows with the features in the order `names` (a permutation of them): the
        study's other parties' order, matched by name as pandas parties are."""
        self._frame = self._frame[[*names, self.label]]
        self.names = list(names)


def released(parties):
    """Calls `release()` on every cluster front end among `parties` (after a study or a Node)."""
    for party in parties or []:
        if isinstance(party, _Partitions):
            party.release()


def _error_of(failure):
    """The privlogit message inside an engine's wrapped exception (a Spark `PythonException`
    carries the executor's traceback), or the failure's own text."""
    text = str(failure)
    for marker in ("DataError: ", "PrivlogitError: "):
        at = text.rfind(marker)
        rest = text[at + len(marker):].strip() if at >= 0 else ""
        if rest:
            return rest.splitlines()[0]
    return text.strip().splitlines()[-1] if text.strip() else type(failure).__name__


def _numeric(frame_types, what):
    """Refuses columns that are not numbers, by name (a string column would arrive as nulls)."""
    bad = [name for name, numeric in frame_types if not numeric]
    if bad:
        raise DataError(f"{what}: column {', '.join(map(repr, bad))} is not numeric")


class SparkPartitions(_Partitions):
    """A PySpark DataFrame's rows, summed on the executors (`mapInArrow`)."""

    def __init__(self, frame, label, names, what):
        super().__init__(label, names, what)
        from pyspark.sql.types import BooleanType, NumericType

        types = {f.name: f.dataType for f in frame.schema.fields}
        _numeric([(c, isinstance(types[c], (NumericType, BooleanType))) for c in [*self.names, label]], what)
        # Pinned: every round must read the same rows in the same partitions (a plan with a
        # sampled range partitioning or a shuffle would cut them differently each time); each
        # round's answers are checked against these counts and a changed partitioning refused.
        from pyspark import StorageLevel

        # Under plain aliases: PySpark's own Arrow code resolves columns by name, which a dot in
        # one would break; the names travel to the executors beside the rows.
        self._alias = {c: f"_c{k}" for k, c in enumerate([*self.names, label])}
        self._frame = frame.select(*[_spark_column(c).cast("double").alias(self._alias[c]) for c in [*self.names, label]])
        self._frame = self._pinned = self._frame.persist(StorageLevel.MEMORY_AND_DISK)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            counts = dict(self._frame.mapInArrow(_spark_count, "part long, rows long").collect())
        parts = self._frame.rdd.getNumPartitions()
        sizes = [int(counts.get(k, 0)) for k in range(parts)]
        self.offsets = list(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)) if sizes else []
        self.rows = int(sum(sizes))
        self.describe = f"{what} (Spark DataFrame, {parts} partitions)"

    def release(self):
        self._pinned.unpersist()

    def order_as(self, names):
        self._frame = self._frame.select(*[self._alias[c] for c in [*names, self.label]])
        self.names = list(names)

    def run(self, request):
        request, offsets, names, what = bytes(request), self.offsets, self.names, self.what

        def answer(batches):
            import pyarrow as pa
            from pyspark import TaskContext

            import privlogit._native as _native

            part = TaskContext.get().partitionId()
            x, y = _arrow_rows(list(batches), len(names))
            out = _native.partition_answer(request, int(offsets[part]), x, y, names, f"{what}, Spark partition {part}")
            yield pa.RecordBatch.from_pydict({"part": [part], "answer": [out]})

        try:
            with warnings.catch_warnings():
                # PySpark checks its pandas version even for Arrow-only UDFs.
                warnings.simplefilter("ignore", FutureWarning)
                rows = self._frame.mapInArrow(answer, "part long, answer binary").collect()
        except Exception as failure:  # noqa: BLE001 - Spark wraps the executor's error
            raise DataError(_error_of(failure)) from None
        return [bytes(r["answer"]) for r in sorted(rows, key=lambda r: r["part"])]


def _spark_column(name):
    """A column by its name as written (a dot in it is part of the name, not a field)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _spark_count(batches):
    import pyarrow as pa
    from pyspark import TaskContext

    rows = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_pydict({"part": [TaskContext.get().partitionId()], "rows": [rows]})


def _arrow_rows(batches, features):
    """Arrow batches (features then the label, all double) as float64 columns (the features)
    and the labels; nulls become NaN, which the kernels refuse by row and column."""
    def column(j):
        parts = [b.column(j).to_numpy(zero_copy_only=False) for b in batches]
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0)
        return np.ascontiguousarray(whole, dtype=np.float64)

    return [column(j) for j in range(features)], column(features)


class DaskPartitions(_Partitions):
    """A Dask DataFrame's rows, summed on the workers (one task per partition)."""

    def __init__(self, frame, label, names, what):
        super().__init__(label, names, what)
        import pandas as pd

        # Columns by their own keys (a name may be a number), features and label named as text.
        keys = {str(c): c for c in frame.columns}
        dtypes = frame.dtypes
        _numeric([(c, pd.api.types.is_numeric_dtype(dtypes[keys[c]]) or pd.api.types.is_bool_dtype(dtypes[keys[c]]))
                  for c in [*self.names, label]], what)
        # Recomputed from its graph every round (a file read again: the same rows in the same
        # order); persist a frame first whose graph could order rows differently each time.
        self._frame = frame[[keys[c] for c in [*self.names, label]]]
        self._frame.columns = [*self.names, label]
        sizes = [int(n) for n in self._frame.map_partitions(len).compute()]
        self.offsets = list(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)) if sizes else []
        self.rows = int(sum(sizes))
        self.describe = f"{what} (Dask DataFrame, {len(sizes)} partitions)"

    def run(self, request):
        import dask

        request = bytes(request)
        tasks = [
            dask.delayed(_dask_answer)(request, int(offset), part, self.names, self.label, f"{self.what}, Dask partition {k}")
            for k, (offset, part) in enumerate(zip(self.offsets, self._frame.to_delayed()))
        ]
        try:
            return list(dask.compute(*tasks))
        except DataError:
            raise
        except Exception as failure:  # noqa: BLE001 - a worker's error, reported as data's
            raise DataError(_error_of(failure)) from None


def _dask_answer(request, offset, frame, names, label, source):
    import privlogit._native as _native

    columns = [np.ascontiguousarray(frame[c].to_numpy(dtype=np.float64, na_value=np.nan)) for c in names]
    y = np.ascontiguousarray(frame[label].to_numpy(dtype=np.float64, na_value=np.nan))
    return _native.partition_answer(request, offset, columns, y, names, source)
