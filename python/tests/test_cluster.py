"""A Node whose rows live in a Spark or Dask cluster (`privlogit.cluster`): the sums are
computed on the partitions, the model is the file Nodes' model.

Spark runs in local mode (`local[2]`, Java 17); Dask on its default local scheduler. Both are
optional extras: without them these tests are skipped with the reason printed, unless
PRIVLOGIT_REQUIRE_SPARK=1 / PRIVLOGIT_REQUIRE_DASK=1 (CI sets both) make a missing engine a
failure."""
import json
import os
import shutil
import sys
import threading

import numpy as np
import pytest

import privlogit
from test_roles import HOSPITALS, Process, servers, study_file

pd = pytest.importorskip("pandas")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "data", "demo")


def _engine(module, variable):
    """The engine's module, or a skip (a failure when `variable` requires it)."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as missing:
        if os.environ.get(variable) == "1":
            pytest.fail(f"{module} is required ({variable}=1): {missing}")
        pytest.skip(f"{module} is not installed ({missing}); pip install './python[spark,dask]'")


@pytest.fixture(scope="module")
def spark():
    _engine("pyspark", "PRIVLOGIT_REQUIRE_SPARK")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("PRIVLOGIT_REQUIRE_SPARK") == "1":
            pytest.fail("Spark needs Java 17 (java on PATH or JAVA_HOME)")
        pytest.skip("Spark needs Java 17 (java on PATH or JAVA_HOME)")
    from pyspark.sql import SparkSession

    # Executors run this interpreter, where privlogit is installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("privlogit-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def dask_dataframe():
    return _engine("dask.dataframe", "PRIVLOGIT_REQUIRE_DASK")


def ordered(spark, frame, partitions):
    """`frame` as a Spark DataFrame of `partitions` partitions holding its rows in order (a
    range partitioning on the row number, then sorted within each partition), and its feature
    names (the row number is not one)."""
    indexed = spark.createDataFrame(frame.assign(_row=np.arange(len(frame))))
    cut = indexed.repartitionByRange(partitions, "_row").sortWithinPartitions("_row")
    return cut, [c for c in frame.columns if c != "label"]


def hospitals(directory, features=6, held_out=40):
    """The demo hospitals' first `features` columns and the label, training rows and the last
    `held_out` rows apart, as DataFrames and CSV files (`train_a.csv`, `test_a.csv`, ...)."""
    frames = {}
    for h in "abc":
        whole = pd.read_csv(os.path.join(DEMO, f"hospital_{h}.csv"))
        whole = whole[[*whole.columns[:features], "label"]]
        train, test = whole.iloc[:-held_out], whole.iloc[-held_out:]
        train.to_csv(directory / f"train_{h}.csv", index=False)
        test.to_csv(directory / f"test_{h}.csv", index=False)
        frames[h] = train.reset_index(drop=True)
    return frames


def test_sums_do_not_depend_on_the_partitioning(spark, dask_dataframe, tmp_path):
    # One Node's rows as a file, as Spark DataFrames of 1 and 17 partitions and as Dask
    # DataFrames of 1 and 17 (one partition holding both blocks of 1,024 rows; partitions of
    # about 67 rows, one of them cut by the blocks' boundary): every kind of sum is the same to
    # the last bit, because blocks
    # of rows are counted from the first row whatever the partitions (privlogit.cluster).
    frame = pd.read_csv(os.path.join(DEMO, "hospital_a.csv"))
    frame = pd.concat([frame] * 6, ignore_index=True)  # 1,140 rows: a block boundary inside
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)
    p = frame.shape[1] - 1
    beta = np.linspace(-0.3, 0.2, p)
    kinds = [("gradient", beta), ("information", beta), ("bound", None), ("moments", None), ("classes", None)]
    reference = {k: privlogit.cluster.sums(path, k, b, label="label") for k, b in kinds}
    for partitions in [1, 17]:
        sframe, names = ordered(spark, frame, partitions)
        assert sframe.rdd.getNumPartitions() == partitions
        dframe = dask_dataframe.from_pandas(frame, npartitions=partitions, sort=False)
        for kind, b in kinds:
            for engine, got in [("spark", privlogit.cluster.sums(sframe, kind, b, label="label", names=names)),
                                ("dask", privlogit.cluster.sums(dframe, kind, b, label="label"))]:
                assert np.array_equal(got, reference[kind]), (engine, partitions, kind)


def test_a_spark_node_a_dask_node_and_a_file_node_give_the_files_model(spark, dask_dataframe, cli, tmp_path):
    # Five processes' study over mutual TLS: key holder, aggregator and one Node as the CLI, a
    # Spark Node (local[2], 8 partitions) and a Dask Node from this process; each Node
    # evaluates the model on its own held-out rows. It equals the study of the three files.
    binary = os.path.join(ROOT, "target", "release", "privlogit")
    frames = hospitals(tmp_path)
    settings = 'label = "label"\nstandardize = true\nlambda = 0.5\nevaluate = true\n'
    study = study_file(cli, tmp_path, settings)
    keyholder, aggregator, address, result = servers(binary, study, tmp_path)
    file_node = Process(binary, "node", "--study", study, "--identity", tmp_path / HOSPITALS[2],
                        "--aggregator", address, "--party", tmp_path / "train_c.csv",
                        "--test-party", tmp_path / "test_c.csv")
    sframe, names = ordered(spark, frames["a"], 8)
    assert sframe.rdd.getNumPartitions() == 8
    dframe = dask_dataframe.from_pandas(frames["b"], npartitions=3, sort=False)
    failures = []

    def dask_node():
        try:
            privlogit.node(study, tmp_path / HOSPITALS[1], dframe, label="label", aggregator=address,
                           test_party=[str(tmp_path / "test_b.csv")])
        except Exception as failure:  # noqa: BLE001 - reported by the assertion below
            failures.append(failure)

    thread = threading.Thread(target=dask_node)
    thread.start()
    privlogit.node(study, tmp_path / HOSPITALS[0], sframe, label="label", names=names, aggregator=address,
                   test_party=[str(tmp_path / "test_a.csv")])
    thread.join()
    assert not failures, failures
    for p in [file_node, aggregator, keyholder]:
        p.finish()

    distributed = json.loads(result.read_text())
    local = privlogit.study([tmp_path / f"train_{h}.csv" for h in "abc"], label="label", standardize=True,
                            lam=0.5, seed=7, quiet=True, test_party=[str(tmp_path / f"test_{h}.csv") for h in "abc"])
    assert distributed["iterations"] == local["iterations"]
    assert distributed["names"] == local["names"]
    # The same rows in the same order: the same sums to the last bit, so the same model.
    for field in ["coefficients", "standard_errors"]:
        diff = np.max(np.abs(np.asarray(distributed[field]) - np.asarray(local[field])))
        assert diff <= 1e-12, (field, diff)
    for field in ["test_auc", "test_log_loss", "test_accuracy", "test_brier"]:
        assert abs(distributed[field] - local[field]) <= 1e-12, field


def test_a_bad_value_in_a_partition_is_named(spark, dask_dataframe):
    # A NaN on row 100 of the DataFrame is refused with the partition, the row counted over the
    # whole frame and the column; a text column is refused before any job runs.
    frame = pd.read_csv(os.path.join(DEMO, "hospital_a.csv"))
    frame.loc[99, "mean_texture"] = np.nan
    sframe, names = ordered(spark, frame, 4)
    with pytest.raises(privlogit.DataError, match=r"Spark partition \d, row 100: column \"mean_texture\" is NaN"):
        privlogit.cluster.sums(sframe, "bound", label="label", names=names)
    dframe = dask_dataframe.from_pandas(frame, npartitions=3, sort=False)
    with pytest.raises(privlogit.DataError, match=r"Dask partition 1, row 100: column \"mean_texture\" is NaN"):
        privlogit.cluster.sums(dframe, "bound", label="label")
    with pytest.raises(privlogit.DataError, match="'mean_radius' is not numeric"):
        privlogit.cluster.sums(dask_dataframe.from_pandas(frame.assign(mean_radius="x"), npartitions=2),
                               "bound", label="label")
    with pytest.raises(privlogit.DataError, match="label column 'outcome' not found"):
        privlogit.cluster.sums(dframe, "bound", label="outcome")


def test_a_bad_weight_in_a_partition_is_refused_by_row(dask_dataframe):
    # A weighted model's weights are checked where the rows are; a weight 0 is refused with
    # its row, as in a file.
    frame = pd.read_csv(os.path.join(DEMO, "hospital_a.csv"))[["mean_radius", "mean_texture", "label"]]
    frame = frame.assign(w=1.0)
    frame.loc[41, "w"] = 0.0
    clean = frame.assign(w=1.0)
    parties = [clean, dask_dataframe.from_pandas(frame, npartitions=3, sort=False), clean]
    with pytest.raises(privlogit.DataError, match=r"Dask DataFrame, 3 partitions\): row 42, weight 0(\.0)? in column \"w\" is not a positive number"):
        privlogit.study(parties, label="label", weights="w", standardize=True, quiet=True)


def test_the_plaintext_fit_collects_cluster_frames(spark, dask_dataframe):
    # `privlogit.fit` holds every row in its process: Spark and Dask parties are collected and
    # fitted as the same rows in pandas are.
    frames = [pd.read_csv(os.path.join(DEMO, f"hospital_{h}.csv")) for h in "abc"]
    reference = privlogit.fit(frames, label="label", standardize=True)
    sframe, names = ordered(spark, frames[0], 3)
    got = privlogit.fit([sframe.select(*names, "label"), dask_dataframe.from_pandas(frames[1], npartitions=2),
                         frames[2]], label="label", standardize=True)
    assert np.array_equal(got["coef"], reference["coef"])


def test_cluster_parties_are_matched_by_column_name(spark, dask_dataframe, tmp_path):
    # A cluster party whose columns are in another order is reordered by name to the study's
    # first party (as pandas parties are), and a column name with a dot is a name, not a field.
    frame = pd.read_csv(os.path.join(DEMO, "hospital_a.csv")).rename(columns={"mean_radius": "mean.radius"})
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)
    features = [c for c in frame.columns if c != "label"]
    reference = privlogit.cluster.sums(path, "bound", label="label")
    shuffled = frame[[*features[::-1], "label"]]
    for cluster_frame in [ordered(spark, shuffled, 3)[0].select(*[f"`{c}`" for c in shuffled.columns]),
                          dask_dataframe.from_pandas(shuffled, npartitions=3, sort=False)]:
        first = privlogit._party(frame, "label", None, "party 1")
        front = privlogit._party(cluster_frame, "label", None, "party 2")
        assert front.names == features[::-1]
        privlogit._by_name([first, front])
        assert front.names == features
        assert np.array_equal(privlogit.cluster.sums(front, "bound"), reference)
