#!/usr/bin/env python3
"""Independent reference for privlogit's distributed deep learning (issue 16, dissertation ch. 3).

Centralised training, in numpy, of the network of section 3.4.2 (ReLU hidden layers of 50 and
20 units, a two-class softmax output, cross-entropy) on breast_cancer standardised with the
pooled mean and ddof=0 standard deviation, its rows split into three blocks of 190, 190 and 189
(the participants). Ten iterations of Algorithm 1 without noise, with q = 1 and every coordinate
uploaded as its value: for each block in turn, every example's gradient is clipped coordinate by
coordinate to [-B, B] (eq. 3.3), averaged over the block (eq. 3.4), and W := W - r G (eq. 3.1).

The initial parameters come from numpy's default_rng(2026) (Glorot-uniform weights, zero
biases, privlogit's layout: per layer the weights row by row, one row per output unit, then the
biases) and are written to the JSON so that privlogit starts from them (`dl --init`).

Run from the repository root (needs numpy):

    python3 tests/reference/dpstgd_reference.py ../shared/data/breast_cancer.csv > tests/reference/dpstgd_reference.json
"""
import json
import sys

import numpy as np

SIZES = [30, 50, 20, 2]
BOUND = 0.5
RATE = 0.1
ITERATIONS = 10
BLOCKS = [(0, 190), (190, 380), (380, 569)]


def load(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    j = header.index("label")
    y = raw[:, j].astype(int)
    x = np.delete(raw, j, axis=1)
    x = (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)
    return x, y


def unpack(theta):
    layers, at = [], 0
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        w = theta[at:at + fan_in * fan_out].reshape(fan_out, fan_in)
        at += fan_in * fan_out
        b = theta[at:at + fan_out]
        at += fan_out
        layers.append((w, b))
    return layers


def per_example_gradients(theta, x, y):
    """Rows: one flattened gradient per example, in the parameter layout."""
    layers = unpack(theta)
    acts = [x]
    for k, (w, b) in enumerate(layers):
        z = acts[-1] @ w.T + b
        acts.append(np.maximum(z, 0.0) if k < len(layers) - 1 else z)
    z = acts[-1]
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    delta = p - np.eye(2)[y]
    grads = [None] * len(layers)
    for k in range(len(layers) - 1, -1, -1):
        w, _ = layers[k]
        gw = delta[:, :, None] * acts[k][:, None, :]
        grads[k] = np.concatenate([gw.reshape(len(x), -1), delta], axis=1)
        if k > 0:
            delta = (delta @ w) * (acts[k] > 0)
    return np.concatenate(grads, axis=1)


def main():
    x, y = load(sys.argv[1])
    rng = np.random.default_rng(2026)
    parts = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        a = np.sqrt(6.0 / (fan_in + fan_out))
        parts.append(rng.uniform(-a, a, fan_in * fan_out))
        parts.append(np.zeros(fan_out))
    initial = np.concatenate(parts)
    theta = initial.copy()
    for _ in range(ITERATIONS):
        for start, end in BLOCKS:
            g = np.clip(per_example_gradients(theta, x[start:end], y[start:end]), -BOUND, BOUND)
            theta = theta - RATE * g.sum(axis=0) / (end - start)
    json.dump(
        {
            "command": "python3 tests/reference/dpstgd_reference.py ../shared/data/breast_cancer.csv",
            "numpy": np.__version__,
            "sizes": SIZES,
            "bound": BOUND,
            "learning_rate": RATE,
            "iterations": ITERATIONS,
            "blocks": BLOCKS,
            "initial": initial.tolist(),
            "final": theta.tolist(),
        },
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
