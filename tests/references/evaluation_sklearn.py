"""Reference values for the held-out evaluation tests (cli/tests/suite/evaluation.rs): winequality_red's
first 1,200 rows fit an unpenalised logistic regression with an intercept (statsmodels' Logit,
Newton), its last 399 rows are held out, and scikit-learn scores the model on them.

Run: target/dev-venv/bin/python tests/references/evaluation_sklearn.py
Versions used: scikit-learn 1.9.1, statsmodels 0.15.0, numpy 2.4.6.

Accuracy predicts 1 at probability >= 1/2 (privlogit's threshold). The calibration table uses
ten fixed bins of predicted risk [k/10, (k+1)/10) (the last closed) and Hosmer and Lemeshow's
statistic over the bins with rows and 0 < expected < rows, df = those bins - 2. The held-out
rows contain repeated rows (the wine file has duplicates), so the AUC has tied scores; the
script counts them.
"""
import json
import sys

import numpy as np
import scipy.stats
import sklearn
import statsmodels.api as sm
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss, roc_auc_score

SRC = "../shared/data/winequality_red.csv"
with open(SRC) as f:
    header = f.readline().strip().split(",")
m = np.loadtxt(SRC, delimiter=",", skiprows=1)
j = header.index("good")
y, x = m[:, j], np.delete(m, j, axis=1)
train, test = slice(0, 1200), slice(1200, None)
r = sm.Logit(y[train], sm.add_constant(x[train])).fit(method="newton", tol=1e-12, maxiter=100, disp=0)
p = r.predict(sm.add_constant(x[test], has_constant="add"))
yt = y[test]
bins = np.minimum((p * 10).astype(int), 9)
table, h, used = [], 0.0, 0
for k in range(10):
    sel = bins == k
    n, o, e = int(sel.sum()), int(yt[sel].sum()), float(p[sel].sum())
    table.append({"n": n, "observed": o, "expected": e})
    if n > 0 and 0 < e < n:
        h += (o - e) ** 2 / (e * (1 - e / n))
        used += 1
df = used - 2
_, counts = np.unique(p, return_counts=True)
out = {
    "sklearn": sklearn.__version__,
    "coefficients": r.params.tolist(),
    "test_n": int(len(yt)),
    "test_auc": roc_auc_score(yt, p),
    "test_log_loss": log_loss(yt, p),
    "test_accuracy": accuracy_score(yt, (p >= 0.5).astype(float)),
    "test_brier": brier_score_loss(yt, p),
    "bins": table,
    "hosmer_lemeshow": h,
    "df": df,
    "p_value": float(scipy.stats.chi2.sf(h, df)),
    "tied_scores": int((counts > 1).sum()),
}
json.dump(out, sys.stdout, indent=1)
print()
