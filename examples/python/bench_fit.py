"""The Python package against the command line on a SimuX50-size plaintext fit (issue 18).

    privlogit simulate --rows 1000000 --features 50 --seed 50 --out simux50.plb
    python examples/python/bench_fit.py simux50.plb [--repeats 7] [--cli target/release/privlogit]

Alternates, `repeats` times: the command line as a whole process (`privlogit fit --party FILE
--label y --standardize --optimizer privlogit-accel --json`, timed from start to exit), then the
same work through the package in this process (`privlogit.load` + `privlogit.fit`, timed around
the two calls; the interpreter's start and `import privlogit`, about 0.1 s of numpy import, are
not the calls' cost and are left out). Prints both medians, the median of the paired ratios
Python/CLI, and the largest coefficient difference between the two (they must agree exactly:
same loader, same preparation, same optimiser).
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import privlogit

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("table")
parser.add_argument("--repeats", type=int, default=7)
parser.add_argument("--cli", default="target/release/privlogit")
args = parser.parse_args()

command = [args.cli, "fit", "--party", args.table, "--label", "y", "--standardize", "--optimizer", "privlogit-accel", "--quiet", "--json"]
cli_seconds, python_seconds = [], []
for repeat in range(args.repeats + 1):  # the first pair warms the page cache and is not counted
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    cli = time.perf_counter() - start
    start = time.perf_counter()
    X, y, _ = privlogit.load(args.table, "y")
    out = privlogit.fit([(X, y)], optimizer="privlogit-accel", lam=1.0, standardize=True, tol=1e-6, max_iter=1000)
    python = time.perf_counter() - start
    del X, y
    if repeat > 0:
        cli_seconds.append(cli)
        python_seconds.append(python)

cli_coef = np.asarray(json.loads(done.stdout)["coefficients"])
ratios = [p / c for p, c in zip(python_seconds, cli_seconds)]
print(f"repeats {args.repeats}, {out['n_iter']} iterations each")
print(f"CLI whole process  median {statistics.median(cli_seconds):.3f} s  (min {min(cli_seconds):.3f}, max {max(cli_seconds):.3f})")
print(f"Python load + fit  median {statistics.median(python_seconds):.3f} s  (min {min(python_seconds):.3f}, max {max(python_seconds):.3f})")
print(f"paired ratio Python/CLI median {statistics.median(ratios):.4f} (min {min(ratios):.4f}, max {max(ratios):.4f})")
print(f"max |coef difference| {np.max(np.abs(out['coef'] - cli_coef)):.3g}")
