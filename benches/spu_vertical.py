#!/usr/bin/env python3
"""Side by side: privlogit's vertical study and SecretFlow SPU's logistic regression (sf-sml's
SGD LogisticRegression, the SS-LR of SecretFlow's tutorials) on the same joined columns.

Both fit the log-likelihood with an l2 penalty lambda / 2 |beta|^2 (sml: `C = 1 / lambda`) on
columns each party standardised over the shared rows (ddof 0). One difference cannot be
removed: a secure privlogit study penalises the intercept too (its bound must be positive
definite), sml never does. So each tool is measured against the optimum of its own objective
(`privlogit fit --vertical`, with `--free-intercept` for sml's), and the distance between the
two optima is printed beside them. sml applies the penalty once per batch: with one batch per
epoch (the 398 rows here are fewer than its default 512) that is the objective above. Runs
alternate (privlogit, SPU, privlogit, ...) and medians are reported, because the machine is
shared.

SPU runs in its in-process simulator (two parties, SEMI2K over the 64-bit ring, SPU's default
18 fractional bits), which is how SecretFlow's documentation measures it on one machine; the
intersection is not part of SPU (SecretFlow runs it separately), so only SPU's training is
timed, while privlogit's wall time includes its intersection, key generation and process start.

Requirements: `pip install spu==0.9.5 pandas scikit-learn "numpy<2"` and `pip install --no-deps
sf-sml` (sml pins an older spu and imports pandas); a release build of privlogit. Without spu or the binary it exits 2 naming what is missing (0 with `--allow-skip`).

    python benches/spu_vertical.py [--runs 3] [--privlogit target/release/privlogit]
"""

import csv
import os
import sys

from spu_common import ROOT, alternate, arguments, optima, parse, report, spu_fit, timed_json

try:
    import numpy as np
except ImportError:  # reported by main() with the other requirements
    np = None

FILES = ["outcomes.csv", "imaging.csv", "registry.csv"]


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def joined(directory, label):
    """The intersection's rows, the labelling party's columns first (privlogit's order), each
    party's columns standardised over those rows (ddof 0)."""
    parties = [read(os.path.join(directory, f)) for f in FILES]
    ids = [{r[h.index("id")]: r for r in rows} for h, rows in parties]
    common = sorted(set.intersection(*(set(i) for i in ids)))
    order = sorted(range(len(parties)), key=lambda k: label not in parties[k][0])
    names, blocks, y = [], [], None
    for k in order:
        header, _ = parties[k]
        cols = [c for c in header if c not in ("id", label)]
        block = np.array([[float(ids[k][i][header.index(c)]) for c in cols] for i in common])
        block = (block - block.mean(axis=0)) / block.std(axis=0)
        names += cols
        blocks.append(block)
        if label in header:
            y = np.array([float(ids[k][i][header.index(label)]) for i in common])
    return names, np.hstack(blocks), y


def privlogit(binary, args, lam):
    cmd = [binary, *args, "--vertical", "--id", "id", "--label", "label", "--standardize",
           "--lambda", str(lam), "--json", "--quiet"]
    for f in FILES:
        cmd += ["--party", os.path.join(ROOT, "data", "vertical", f)]
    return timed_json(cmd)


def main():
    a, refused = parse(arguments(__doc__))
    if refused is not None:
        return refused

    names, x, y = joined(os.path.join(ROOT, "data", "vertical"), "label")
    optimum, free_optimum = optima(
        lambda extra: privlogit(a.privlogit, ["fit", "--gradient-tol", "1e-10", *extra], a.lam),
        names)
    n, p = x.shape
    # SPU settings: sml's defaults, and full-batch gradient descent at the largest safe step
    # (2 / L for the averaged objective, L <= lambda_max(X^T X) / (4 n) + lambda / n) with
    # the most accurate sigmoid sml offers, for as many epochs as privlogit's run takes rounds.
    lipschitz = np.linalg.eigvalsh(np.c_[np.ones(n), x].T @ np.c_[np.ones(n), x]).max() / (4 * n) + a.lam / n
    configs = {
        "SPU, sml defaults (20 epochs, batch 512, lr 0.1, sigmoid 'sr')":
            dict(epochs=20, learning_rate=0.1, batch_size=512, sig_type="sr"),
        "SPU, full-batch GD at step 1.9/L, sigmoid 'real', 1000 epochs":
            dict(epochs=1000, learning_rate=1.9 / lipschitz, batch_size=n, sig_type="real"),
    }
    if any(c["batch_size"] < n for c in configs.values()):
        raise SystemExit("sml would apply the penalty once per batch: keep one batch per epoch")
    ours = {
        "privlogit study --vertical (accelerated PrivLogit, defaults)": ["study"],
        "privlogit study --vertical --optimizer newton (secure Newton)":
            ["study", "--optimizer", "newton"],
    }

    def run_ours(args):
        seconds, out = privlogit(a.privlogit, args, a.lam)
        return seconds, dict(
            iterations=out["iterations"],
            error=float(np.abs(np.array(out["coefficients"]) - optimum).max()),
            bytes=out["bytes_aggregator_to_keyholder"] + out["bytes_keyholder_to_aggregator"],
        )

    def run_spu(c):
        seconds, w = spu_fit(x, y, a.lam, **c)
        return seconds, dict(
            iterations=c["epochs"] * -(-n // c["batch_size"]),
            error=float(np.abs(w - free_optimum).max()),
            bytes=None,
        )

    times, results = alternate(a.runs, ours, configs, run_ours, run_spu)
    print(f"vertical breast_cancer (data/vertical: {n} shared rows, {p} features, 3 parties), "
          f"lambda {a.lam}; medians of {a.runs} alternated runs; the two objectives' optima "
          f"(intercept penalised or not) are {np.abs(optimum - free_optimum).max():.2e} apart")
    report(times, results, "iterations", lambda r: r["iterations"], a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
