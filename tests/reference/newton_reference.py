#!/usr/bin/env python3
"""Independent reference for privlogit's plaintext optimisers.

Fits l2-regularised logistic regression (dissertation eq. 2.10: maximise
sum_i [y_i log p_i + (1-y_i) log(1-p_i)] - lambda/2 ||beta||^2, intercept included and
penalised) on the shared data sets, standardised with the pooled mean and ddof=0 standard
deviation and an intercept column prepended, lambda = 1.

Two independent solvers: Newton's method written directly in numpy (iterated until the step is
below 1e-15), and scipy.optimize.minimize(method="trust-exact"). Their maximum difference is
printed as a sanity check. The numpy Newton values are written to newton_reference.json.

Run from the repository root (needs numpy and scipy; CI does not, it reads the JSON):

    python3 tests/reference/newton_reference.py ../shared/data > tests/reference/newton_reference.json
"""
import json
import sys

import numpy as np
from scipy.optimize import minimize

DATASETS = [("breast_cancer.csv", "label"), ("winequality_red.csv", "good")]
LAMBDA = 1.0


def load(path, label):
    with open(path) as f:
        header = f.readline().strip().split(",")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    j = header.index(label)
    y = raw[:, j]
    x = np.delete(raw, j, axis=1)
    names = [h for h in header if h != label]
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)
    x = np.hstack([np.ones((x.shape[0], 1)), x])
    return ["intercept"] + names, x, y


def objective(beta, x, y):
    z = x @ beta
    return np.sum(y * z - np.logaddexp(0.0, z)) - 0.5 * LAMBDA * beta @ beta


def newton(x, y):
    beta = np.zeros(x.shape[1])
    for iteration in range(1, 100):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        g = x.T @ (y - p) - LAMBDA * beta
        h = x.T @ (x * (p * (1 - p))[:, None]) + LAMBDA * np.eye(x.shape[1])
        step = np.linalg.solve(h, g)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-15:
            break
    return beta, iteration


def scipy_fit(x, y):
    def f(b):
        return -objective(b, x, y)

    def grad(b):
        p = 1.0 / (1.0 + np.exp(-(x @ b)))
        return -(x.T @ (y - p) - LAMBDA * b)

    def hess(b):
        p = 1.0 / (1.0 + np.exp(-(x @ b)))
        return x.T @ (x * (p * (1 - p))[:, None]) + LAMBDA * np.eye(x.shape[1])

    r = minimize(f, np.zeros(x.shape[1]), jac=grad, hess=hess, method="trust-exact",
                 options={"gtol": 1e-12})
    return r.x


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    import scipy
    out = {"lambda": LAMBDA, "numpy": np.__version__, "scipy": scipy.__version__,
           "command": "python3 tests/reference/newton_reference.py ../shared/data",
           "datasets": {}}
    for file, label in DATASETS:
        names, x, y = load(f"{root}/{file}", label)
        beta, iterations = newton(x, y)
        other = scipy_fit(x, y)
        print(f"{file}: numpy Newton {iterations} iterations; max |newton - scipy trust-exact| "
              f"= {np.max(np.abs(beta - other)):.2e}", file=sys.stderr)
        out["datasets"][file] = {
            "label": label,
            "newton_iterations": iterations,
            "max_abs_diff_scipy_trust_exact": float(np.max(np.abs(beta - other))),
            "names": names,
            "coefficients": [float(b) for b in beta],
            "objective": float(objective(beta, x, y)),
        }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
