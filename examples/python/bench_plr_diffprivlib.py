"""PLR's utility beside its nearest peer, diffprivlib's LogisticRegression (the same mechanism
family: Chaudhuri et al. 2011 objective perturbation), on one protocol, so that it cannot slip
unnoticed (python/tests/test_dp.py checks privlogit against the diffprivlib figures this
prints).

Protocol: breast_cancer (569 x 30), train_test_split 400/169 (random_state 0), z-scores from the
training rows, rows scaled to norm 1, lambda 0.01 (diffprivlib: fit_intercept=False,
data_norm=1, C = 1/(n lambda), and C = 1/(n (lambda + Delta)) with PLR's Delta: the
matched column), `--draws` draws per epsilon with seeds 1000, 1001, ... on both
sides (privlogit `seed`, diffprivlib `random_state`), the two alternated draw by draw; mean test
AUC and its standard error.

diffprivlib 0.6.6 needs scikit-learn < 1.6: run this in a virtual environment of its own,
    python3 -m venv /tmp/dpl && /tmp/dpl/bin/pip install diffprivlib==0.6.6 scikit-learn==1.5.2 ./python
    /tmp/dpl/bin/python examples/python/bench_plr_diffprivlib.py --data ../shared/data/breast_cancer.csv
"""
import argparse
import time

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from privlogit import dp

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
LAMBDA = 0.01


def protocol(path):
    """The split, standardised with training statistics, rows scaled to norm 1."""
    table = pd.read_csv(path)
    y = table["label"].to_numpy(dtype=float)
    X = table.drop(columns=["label"]).to_numpy(dtype=float)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=400, test_size=169, random_state=0)
    mean, sd = X_train.mean(axis=0), X_train.std(axis=0)
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    return unit((X_train - mean) / sd), unit((X_test - mean) / sd), y_train, y_test


def privlogit_auc(X_train, X_test, y_train, y_test, epsilon, seed):
    w = dp.plr(X_train, y_train, epsilon, lam=LAMBDA, seed=seed).w
    return roc_auc_score(y_test, X_test @ w)


def plr_penalty(epsilon, n):
    """PLR's whole l2 penalty, lambda + Delta, as src/dp/plr.rs sets it (PlrBudget::new: the
    least Delta that keeps eps' at NOISE_SHARE = 0.9 of epsilon)."""
    needed = 1.0 / (4.0 * n * np.expm1((1.0 - 0.9) * epsilon / 2.0))
    return LAMBDA + max(0.0, needed - LAMBDA)


def diffprivlib_auc(X_train, X_test, y_train, y_test, epsilon, seed, penalty=LAMBDA):
    """diffprivlib's fit with C = 1/(n penalty): lambda itself, or PLR's lambda + Delta (the
    matched column, which compares the mechanisms with the penalty rule set aside)."""
    from diffprivlib.models import LogisticRegression

    model = LogisticRegression(epsilon=epsilon, data_norm=1.0, fit_intercept=False,
                               C=1.0 / (len(y_train) * penalty), random_state=seed)
    model.fit(X_train, y_train.astype(int))
    return roc_auc_score(y_test, X_test @ model.coef_.ravel())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="breast_cancer.csv (label column `label`)")
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    args = parser.parse_args()
    split = protocol(args.data)
    n = len(split[2])
    print(f"{'epsilon':>8} {'lambda+Delta':>12} {'privlogit':>18} {'diffprivlib':>18} "
          f"{'diffprivlib, C matched':>23}   seconds (privlogit / diffprivlib)")
    for epsilon in map(float, args.epsilons.split(",")):
        penalty = plr_penalty(epsilon, n)
        ours, theirs, matched, t_ours, t_theirs = [], [], [], 0.0, 0.0
        for i in range(args.draws):
            start = time.perf_counter()
            ours.append(privlogit_auc(*split, epsilon, 1000 + i))
            t_ours += time.perf_counter() - start
            start = time.perf_counter()
            theirs.append(diffprivlib_auc(*split, epsilon, 1000 + i))
            t_theirs += time.perf_counter() - start
            matched.append(diffprivlib_auc(*split, epsilon, 1000 + i, penalty))
        se = lambda a: np.std(a, ddof=1) / np.sqrt(len(a))  # noqa: E731
        print(f"{epsilon:>8} {penalty:>12.4f} {np.mean(ours):>10.5f} +- {se(ours):.5f} "
              f"{np.mean(theirs):>10.5f} +- {se(theirs):.5f} {np.mean(matched):>15.5f} +- {se(matched):.5f}"
              f"   {t_ours:.2f} / {t_theirs:.2f}")


if __name__ == "__main__":
    main()
