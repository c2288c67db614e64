#!/usr/bin/env python3
"""Independent reference for the centred penalty (hypothesis transfer):
maximise sum_i [y_i log p_i + (1-y_i) log(1-p_i)] - lambda/2 ||beta - c||^2, lambda = 1, on the
shared data sets standardised (pooled mean, ddof=0) with an intercept column prepended, and the
public centre c_j = 0.5 (-1)^j (j = 0 is the intercept).

numpy Newton (until the step is below 1e-15) and scipy trust-exact; their difference is printed.

    python3 tests/reference/centred_reference.py ../shared/data > tests/reference/centred_reference.json
"""
import json
import sys

import numpy as np
from scipy.optimize import minimize

from newton_reference import DATASETS, load

LAMBDA = 1.0


def centre(p):
    return np.array([0.5 * (-1) ** j for j in range(p)])


def objective(beta, x, y, c):
    z = x @ beta
    return np.sum(y * z - np.logaddexp(0.0, z)) - 0.5 * LAMBDA * (beta - c) @ (beta - c)


def gradient(beta, x, y, c):
    p = 1.0 / (1.0 + np.exp(-(x @ beta)))
    return x.T @ (y - p) - LAMBDA * (beta - c)


def information(beta, x):
    p = 1.0 / (1.0 + np.exp(-(x @ beta)))
    return x.T @ (x * (p * (1 - p))[:, None]) + LAMBDA * np.eye(x.shape[1])


def newton(x, y, c):
    beta = np.zeros(x.shape[1])
    for iteration in range(1, 100):
        step = np.linalg.solve(information(beta, x), gradient(beta, x, y, c))
        beta = beta + step
        if np.max(np.abs(step)) < 1e-15:
            break
    return beta, iteration


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    import scipy
    out = {"lambda": LAMBDA, "centre": "0.5 (-1)^j", "numpy": np.__version__,
           "scipy": scipy.__version__,
           "command": "python3 tests/reference/centred_reference.py ../shared/data",
           "datasets": {}}
    for file, label in DATASETS:
        names, x, y = load(f"{root}/{file}", label)
        c = centre(x.shape[1])
        beta, iterations = newton(x, y, c)
        other = minimize(lambda b: -objective(b, x, y, c), np.zeros(x.shape[1]),
                         jac=lambda b: -gradient(b, x, y, c), hess=lambda b: information(b, x),
                         method="trust-exact", options={"gtol": 1e-12}).x
        diff = float(np.max(np.abs(beta - other)))
        print(f"{file}: numpy Newton {iterations} iterations; max |newton - scipy| = {diff:.2e}",
              file=sys.stderr)
        out["datasets"][file] = {"newton_iterations": iterations,
                                 "max_abs_diff_scipy_trust_exact": diff,
                                 "coefficients": [float(b) for b in beta],
                                 "objective": float(objective(beta, x, y, c))}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
