#!/usr/bin/env python3
"""Independent references for DPHTL (issue 17, dissertation ch. 4).

1. DPIW without noise (Algorithm 5 step 2, eq. 4.3): breast_cancer standardised (pooled mean,
   ddof=0), each row scaled to norm 1; X = the first 150 rows with label 1, P = rows 300..499.
   beta* minimises mean_P log(1+exp(x.b)) + mean_X log(1+exp(-x.b)) + lambda/2 |b|^2,
   lambda = 0.01, by scipy.optimize.minimize(method="trust-exact") with the exact gradient and
   Hessian; the weights are exp(P b) N_P / sum(exp(P b)).
2. Eq. (4.1) on seeded random weights (numpy default_rng(17): 4 sources over 40 public rows,
   and a target): the simplex point minimising KL(w^T, sum_k w_k w^k), by scipy's SLSQP (a
   generic constrained optimiser), tolerance 1e-14.

Run from the repository root (needs numpy and scipy):

    python3 tests/reference/dphtl_reference.py ../shared/data/breast_cancer.csv > tests/reference/dphtl_reference.json
"""
import json
import sys

import numpy as np
import scipy
from scipy.optimize import minimize

LAMBDA = 0.01


def load(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    j = header.index("label")
    y = raw[:, j]
    x = np.delete(raw, j, axis=1)
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x, y


def dpiw(x, p):
    rows = np.vstack([x, p])
    sign = np.concatenate([np.ones(len(x)), -np.ones(len(p))])
    c = np.concatenate([np.full(len(x), 1 / len(x)), np.full(len(p), 1 / len(p))])

    def f(b):
        z = rows @ b
        return np.sum(c * np.logaddexp(0, -sign * z)) + LAMBDA / 2 * b @ b

    def g(b):
        z = rows @ b
        r = -c * sign / (1 + np.exp(sign * z))
        return rows.T @ r + LAMBDA * b

    def h(b):
        z = rows @ b
        s = c / (1 + np.exp(z)) / (1 + np.exp(-z))
        return rows.T @ (rows * s[:, None]) + LAMBDA * np.eye(len(b))

    res = minimize(f, np.zeros(rows.shape[1]), jac=g, hess=h, method="trust-exact", options={"gtol": 1e-13})
    b = res.x
    e = np.exp(p @ b - np.max(p @ b))
    return b, e * len(p) / e.sum(), float(np.linalg.norm(g(b)))


def mixture():
    rng = np.random.default_rng(17)
    sources = rng.random((4, 40))
    target = rng.random(40)
    a = target / target.sum()
    b = sources / sources.sum(axis=1, keepdims=True)

    def kl(w):
        m = w @ b
        return float(np.sum(a * np.log(a / m)))

    res = minimize(kl, np.full(4, 0.25), method="SLSQP", bounds=[(0, 1)] * 4,
                   constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}], options={"ftol": 1e-14, "maxiter": 1000})
    return sources, target, res.x, kl(res.x)


def main():
    x, y = load(sys.argv[1])
    xs = x[y == 1][:150]
    p = x[300:500]
    beta, weights, grad = dpiw(xs, p)
    sources, target, w, value = mixture()
    json.dump({
        "command": "python3 tests/reference/dphtl_reference.py ../shared/data/breast_cancer.csv",
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "dpiw": {"lambda": LAMBDA, "private": "first 150 rows with label 1", "public": "rows 300..499",
                 "beta": beta.tolist(), "weights": weights.tolist(), "gradient_norm": grad},
        "mixture": {"sources": sources.tolist(), "target": target.tolist(), "weights": w.tolist(), "kl": value},
    }, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
