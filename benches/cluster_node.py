"""One Node's round on a Spark DataFrame, a Dask DataFrame and a file, side by side.

A round of a Node is one pass of sums over its rows (the gradient and log-likelihood at the
round's coefficients, `privlogit.cluster.sums(..., "gradient", beta)`). This times it, per
engine, on the same rows written once as a Parquet file (Gaussian covariates, Bernoulli labels,
numpy seed 1), alternating the engines run by run and reporting medians, and separates each
engine's fixed overhead per round (the same round on 1,024 rows in as many partitions).

    python benches/cluster_node.py --rows 1000000 --features 100 --runs 5

Needs the Python package with its `spark` and `dask` extras (and Java 17 for Spark); `--only`
runs some of the engines (a missing engine is an error unless `--skip-missing`). Spark runs in
local mode on every core (`local[*]`) with the rows persisted, as `privlogit.node` pins them;
Dask reads the Parquet file's row groups on its default scheduler; the file Node streams it.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def parquet(path, rows, features, seed=1, group=131072):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 2.5 / np.sqrt(features), features)
    with pq.ParquetWriter(path, pa.schema([*[(f"x{j}", pa.float64()) for j in range(1, features + 1)], ("y", pa.float64())])) as out:
        for start in range(0, rows, group):
            n = min(group, rows - start)
            x = rng.normal(size=(n, features))
            y = (rng.random(n) < 1 / (1 + np.exp(-x @ beta))).astype(np.float64)
            out.write_table(pa.table({**{f"x{j + 1}": x[:, j] for j in range(features)}, "y": y}),
                            row_group_size=group)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=8, help="Dask partitions (row groups are read per partition)")
    parser.add_argument("--only", default="file,spark,dask")
    parser.add_argument("--skip-missing", action="store_true")
    parser.add_argument("--driver-memory", default="8g")
    args = parser.parse_args()
    engines = args.only.split(",")
    with tempfile.TemporaryDirectory(prefix="privlogit-cluster-bench-") as directory:
        run(args, engines, directory)


def run(args, engines, directory):
    """Writes the rows into `directory`, times every engine, prints the table."""
    import privlogit

    path = os.path.join(directory, "rows.parquet")
    small = os.path.join(directory, "small.parquet")
    t = time.perf_counter()
    parquet(path, args.rows, args.features)
    parquet(small, 1024, args.features, seed=2, group=128)
    print(f"wrote {args.rows:,} x {args.features} in {time.perf_counter() - t:.1f} s ({os.path.getsize(path) / 1e6:.0f} MB)")
    beta = np.linspace(-0.1, 0.1, args.features)

    fronts = {}
    if "file" in engines:
        fronts["file"] = (path, small)
    if "spark" in engines:
        try:
            os.environ["PYSPARK_PYTHON"] = sys.executable
            from pyspark.sql import SparkSession
        except ImportError as missing:
            if not args.skip_missing:
                sys.exit(f"spark: {missing} (pip install './python[spark]'), or --skip-missing")
            print(f"spark skipped: {missing}")
        else:
            spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
                     .config("spark.driver.memory", args.driver_memory).getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            t = time.perf_counter()
            big = privlogit.cluster.partitions(spark.read.parquet(path), "y", "spark")
            print(f"spark: {big.describe}, pinned and counted in {time.perf_counter() - t:.1f} s")
            fronts["spark"] = (big, privlogit.cluster.partitions(spark.read.parquet(small), "y", "spark small"))
    if "dask" in engines:
        try:
            import dask.dataframe as dd
        except ImportError as missing:
            if not args.skip_missing:
                sys.exit(f"dask: {missing} (pip install './python[dask]'), or --skip-missing")
            print(f"dask skipped: {missing}")
        else:
            big = privlogit.cluster.partitions(dd.read_parquet(path).repartition(npartitions=args.partitions), "y", "dask")
            fronts["dask"] = (big, privlogit.cluster.partitions(dd.read_parquet(small), "y", "dask small"))

    times = {name: [] for name in fronts}
    overhead = {name: [] for name in fronts}
    sums = {}
    for _ in range(args.runs):
        for name, (big, little) in fronts.items():
            t = time.perf_counter()
            sums[name] = privlogit.cluster.sums(big, "gradient", beta, label="y")
            times[name].append(time.perf_counter() - t)
            t = time.perf_counter()
            privlogit.cluster.sums(little, "gradient", beta, label="y")
            overhead[name].append(time.perf_counter() - t)
    reference = sums.get("file")
    print(f"\none round (gradient and log-likelihood), {args.rows:,} x {args.features}, median of {args.runs}:")
    print("| engine | seconds a round | fixed overhead a round (1,024 rows) | rows a second | largest difference from the file's sums |")
    print("|---|---|---|---|---|")
    for name in fronts:
        m, o = statistics.median(times[name]), statistics.median(overhead[name])
        diff = "-" if reference is None else f"{np.max(np.abs(sums[name] - reference)) / np.max(np.abs(reference)):.1e}"
        print(f"| {name} | {m:.3f} | {o:.3f} | {args.rows / m:,.0f} | {diff} |")


if __name__ == "__main__":
    main()
