"""Reference values for cli/tests/suite/inference.rs, from statsmodels (pooled, unpenalised) and numpy.

Run: target/dev-venv/bin/python tests/references/inference_statsmodels.py
Versions used: statsmodels 0.15.0, numpy 2.4.6, scipy (statsmodels' dependency).
"""
import json
import sys

import numpy as np
import statsmodels.api as sm

DATA = "../shared/data/"


def load(name, label):
    with open(DATA + name) as f:
        header = f.readline().strip().split(",")
    m = np.loadtxt(DATA + name, delimiter=",", skiprows=1)
    j = header.index(label)
    y = m[:, j]
    x = np.delete(m, j, axis=1)
    names = [h for h in header if h != label]
    return x, y, names


def logit_table(x, y):
    r = sm.Logit(y, sm.add_constant(x, has_constant="add")).fit(method="newton", tol=1e-12, maxiter=100, disp=0)
    g = sm.GLM(y, sm.add_constant(x, has_constant="add"), family=sm.families.Binomial()).fit(tol=1e-14)
    ci = r.conf_int(0.05)
    return {
        "coefficients": r.params.tolist(),
        "standard_errors": r.bse.tolist(),
        "z_values": r.tvalues.tolist(),
        "p_values": r.pvalues.tolist(),
        "conf_int": ci.tolist(),
        "conf_int_90": r.conf_int(0.10).tolist(),
        "log_likelihood": r.llf,
        "null_log_likelihood": r.llnull,
        "deviance": g.deviance,
        "null_deviance": g.null_deviance,
        "aic": r.aic,
        "bic": r.bic,
    }, r


out = {}
x, y, names = load("winequality_red.csv", "good")
full, rf = logit_table(x, y)
out["wine"] = full
# Standardised with the pooled mean and standard deviation (ddof 0), as --standardize does.
out["wine_standardized"], _ = logit_table((x - x.mean(axis=0)) / x.std(axis=0), y)
drop = [names.index("citric_acid"), names.index("residual_sugar")]
reduced, rr = logit_table(np.delete(x, drop, axis=1), y)
out["wine_lr"] = {
    "dropped": ["citric_acid", "residual_sugar"],
    "statistic": float(2 * (rf.llf - rr.llf)),
    "df": 2,
    "p_value": float(__import__("scipy.stats").stats.chi2.sf(2 * (rf.llf - rr.llf), 2)),
    "reduced_log_likelihood": rr.llf,
}
# Per-site intercepts: wine in three contiguous parts of ceil(1599 / 3) = 533 rows (as the tests
# split it), indicator columns site_2 and site_3 after the features (party 1 the reference).
x, y, names = load("winequality_red.csv", "good")
part = np.arange(len(y)) // 533
sites = np.column_stack([(part == 1).astype(float), (part == 2).astype(float)])
out["wine_sites"], _ = logit_table(np.column_stack([x, sites]), y)
out["wine_sites"]["names"] = ["intercept"] + names + ["site_2", "site_3"]
# Penalised: breast_cancer standardised (pooled mean, ddof 0), intercept first and penalised,
# lambda 1 (eq. 2.10). Coefficients by Newton on the penalised objective in numpy, then the
# standard errors as the square roots of diag((X^T A X + lambda I)^-1).
x, y, names = load("breast_cancer.csv", "label")
z = (x - x.mean(axis=0)) / x.std(axis=0)
X = np.column_stack([np.ones(len(y)), z])
lam = 1.0
beta = np.zeros(X.shape[1])
for _ in range(100):
    p = 1 / (1 + np.exp(-X @ beta))
    g = X.T @ (y - p) - lam * beta
    H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(X.shape[1])
    step = np.linalg.solve(H, g)
    beta += step
    if np.abs(step).max() < 1e-15:
        break
p = 1 / (1 + np.exp(-X @ beta))
H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(X.shape[1])
cov = np.linalg.inv(H)
out["breast_cancer_lambda1"] = {
    "coefficients": beta.tolist(),
    "standard_errors": np.sqrt(np.diag(cov)).tolist(),
    "covariance_00_01_11": [cov[0, 0], cov[0, 1], cov[1, 1]],
}
json.dump(out, sys.stdout, indent=1)
print()
