#!/usr/bin/env python3
"""Side by side: privlogit's secure study (rows split between sites) and SecretFlow SPU's
logistic regression (sf-sml's SGD LogisticRegression, the SS-LR of SecretFlow's tutorials) on the
same pooled rows.

Both fit the log-likelihood with an l2 penalty lambda / 2 |beta|^2 (sml: `C = 1 / lambda`) on
features standardised with the pooled mean and standard deviation (ddof 0), which is what
privlogit's `--standardize` computes under encryption and reveals; SPU gets them standardised
the same way (its default-precision inverse square root cannot standardise variances above
about 2^18 itself). One difference cannot be removed: a secure privlogit study penalises the
intercept too, sml never does. So each tool is measured against the optimum of its own
objective (`privlogit fit`, with `--free-intercept` for sml's), and the distance between the two
optima is printed beside them. sml applies the penalty once per batch: one batch per epoch here.
Runs alternate (privlogit, SPU, privlogit, ...) and medians are reported, because the machine is
shared.

SPU runs in its in-process simulator (two parties, SEMI2K over the 64-bit ring, SPU's default 18
fractional bits), which is how SecretFlow's documentation measures it on one machine; only its
training is timed (not the secret sharing of the inputs), while privlogit's wall time is the
whole command: process start, files, key generation, every party.

Requirements: `pip install spu==0.9.5 pandas scikit-learn "numpy<2"` and `pip install --no-deps
sf-sml` (sml pins an older spu and imports pandas); a release build of privlogit. Without spu or the
binary it exits 2 naming what is missing (0 with `--allow-skip`).

    python benches/spu_horizontal.py [--runs 3] [--party FILE ...] [--privlogit target/release/privlogit]
"""

import csv
import os
import sys

from spu_common import ROOT, alternate, arguments, optima, parse, report, spu_fit, timed_json

try:
    import numpy as np
except ImportError:  # reported by main() with the other requirements
    np = None

DEMO = [os.path.join(ROOT, "data", "demo", f"hospital_{h}.csv") for h in "abc"]


def pooled(files, label):
    """Every site's rows, in privlogit's column order, standardised with the pooled mean and
    standard deviation (ddof 0)."""
    names, rows = None, []
    for path in files:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            if names is None:
                names = [c for c in header if c != label]
            elif [c for c in header if c != label] != names:
                raise SystemExit(f"{path}: its columns differ from {files[0]}'s")
            at = [header.index(c) for c in names]
            li = header.index(label)
            rows += [([float(r[k]) for k in at], float(r[li])) for r in reader]
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    return names, (x - x.mean(axis=0)) / x.std(axis=0), y


def privlogit(binary, args, files, label, lam):
    cmd = [binary, *args, "--label", label, "--standardize", "--lambda", str(lam), "--json",
           "--quiet"]
    for f in files:
        cmd += ["--party", f]
    return timed_json(cmd)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--party", action="append", help="a site's file (default: the demo's three)")
    parser.add_argument("--label", default="label")
    parser.add_argument("--epochs", type=int, default=1000, help="full-batch SPU run's epochs")
    a, refused = parse(parser)
    if refused is not None:
        return refused

    files = a.party or DEMO
    names, x, y = pooled(files, a.label)
    tight = ["fit", "--optimizer", "newton", "--gradient-tol", "1e-12"]
    optimum, free_optimum = optima(
        lambda extra: privlogit(a.privlogit, tight + extra, files, a.label, a.lam), names)
    n, p = x.shape
    # SPU settings: sml's defaults, and full-batch gradient descent at the largest safe step
    # (2 / L for the averaged objective, L <= lambda_max(X^T X) / (4 n) + lambda / n) with the
    # most accurate sigmoid sml offers.
    design = np.c_[np.ones(n), x]
    lipschitz = np.linalg.eigvalsh(design.T @ design).max() / (4 * n) + a.lam / n
    configs = {
        "SPU, sml defaults, one batch an epoch (20 epochs, lr 0.1, sigmoid 'sr')":
            dict(epochs=20, learning_rate=0.1, batch_size=n, sig_type="sr"),
        f"SPU, full-batch GD at step 1.9/L, sigmoid 'real', {a.epochs} epochs":
            dict(epochs=a.epochs, learning_rate=1.9 / lipschitz, batch_size=n, sig_type="real"),
    }
    ours = {
        "privlogit study (defaults: accelerated PrivLogit-Hessian in one process, Newton finish)": ["study"],
        "privlogit study --no-newton-finish (accelerated PrivLogit-Hessian alone)":
            ["study", "--no-newton-finish"],
        "privlogit study --protocol newton (secure Newton)": ["study", "--protocol", "newton"],
    }

    def run_ours(args):
        seconds, out = privlogit(a.privlogit, args, files, a.label, a.lam)
        return seconds, dict(
            iterations=out["iterations"],
            rounds=out["rounds"],
            error=float(np.abs(np.array(out["coefficients"]) - optimum).max()),
        )

    def run_spu(c):
        seconds, w = spu_fit(x, y, a.lam, **c)
        return seconds, dict(
            iterations=c["epochs"],
            rounds=None,
            error=float(np.abs(w - free_optimum).max()),
        )

    times, results = alternate(a.runs, ours, configs, run_ours, run_spu)
    print(f"horizontal {', '.join(os.path.relpath(f, ROOT) for f in files)} ({n} rows, {p} "
          f"features, {len(files)} sites), lambda {a.lam}; medians of {a.runs} alternated runs; "
          f"the two objectives' optima (intercept penalised or not) are "
          f"{np.abs(optimum - free_optimum).max():.2e} apart")
    report(times, results, "iterations (rounds)",
           lambda r: f"{r['iterations']}" + (f" ({r['rounds']})" if r["rounds"] else ""), a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
