"""Reference values for tests/suite/glm.rs: statsmodels' GLM (pooled, unpenalised, canonical links) on
winequality_red with a derived column, for the Gaussian and Poisson families, with and without an
offset and prior weights (statsmodels' var_weights, R's glm(weights =)).

Run: target/dev-venv/bin/python tests/references/glm_statsmodels.py
Writes tests/references/wine_glm.csv (the data the tests read) and prints the JSON the tests
compare with (tests/references/glm_statsmodels.json).
Versions used: statsmodels 0.15.0, numpy 2.4.6.

Columns: the wine file's, plus log_total_sulfur_dioxide = ln(total_sulfur_dioxide).
- gaussian (also `t_p_values`, `t_conf_int`: `fit(use_t=True)`): label alcohol; features every other column but log_total_sulfur_dioxide (and, in
  the weighted case, but sulphates and pH); weighted case: offset pH, weights sulphates.
- poisson: label free_sulfur_dioxide (a count); features every other column but
  total_sulfur_dioxide and log_total_sulfur_dioxide (and, in the weighted case, but sulphates);
  weighted case: offset log_total_sulfur_dioxide (a rate per unit of total SO2), weights sulphates.
"""
import json
import sys

import numpy as np
import statsmodels.api as sm

SRC = "../shared/data/winequality_red.csv"
OUT = "tests/references/wine_glm.csv"

with open(SRC) as f:
    header = f.readline().strip().split(",")
m = np.loadtxt(SRC, delimiter=",", skiprows=1)
header.append("log_total_sulfur_dioxide")
m = np.column_stack([m, np.log(m[:, header.index("total_sulfur_dioxide")])])
np.savetxt(OUT, m, delimiter=",", header=",".join(header), comments="", fmt="%.17g")
col = {h: m[:, j] for j, h in enumerate(header)}


def case(family, label, leave_out, offset=None, weights=None, standardize=False):
    names = [h for h in header if h != label and h not in leave_out and h not in (offset, weights)]
    x = np.column_stack([col[n] for n in names])
    if standardize:
        x = (x - x.mean(axis=0)) / x.std(axis=0)
    X = sm.add_constant(x, has_constant="add")
    kw = {}
    if offset:
        kw["offset"] = col[offset]
    if weights:
        kw["var_weights"] = col[weights]
    r = sm.GLM(col[label], X, family=family, **kw).fit(tol=1e-14, maxiter=200)
    extra = {}
    if isinstance(family, sm.families.Gaussian):
        # The dispersion is estimated: t with df_resid, as R's summary.glm (issue 51).
        t = sm.GLM(col[label], X, family=family, **kw).fit(tol=1e-14, maxiter=200, use_t=True)
        extra = {"t_p_values": t.pvalues.tolist(), "t_conf_int": t.conf_int(0.05).tolist()}
    return extra | {
        "names": ["intercept"] + names,
        "coefficients": r.params.tolist(),
        "standard_errors": r.bse.tolist(),
        "z_values": r.tvalues.tolist(),
        "p_values": r.pvalues.tolist(),
        "conf_int": r.conf_int(0.05).tolist(),
        "log_likelihood": float(r.llf),
        "deviance": float(r.deviance),
        "null_deviance": float(r.null_deviance),
        "aic": float(r.aic),
        "bic": float(r.bic_llf),
        "scale": float(r.scale),
        "df_residual": float(r.df_resid),
    }


G, P = sm.families.Gaussian(), sm.families.Poisson()
out = {}
for std in (False, True):
    tag = "_standardized" if std else ""
    out["gaussian" + tag] = case(G, "alcohol", ["log_total_sulfur_dioxide"], standardize=std)
    out["gaussian_offset_weights" + tag] = case(
        G, "alcohol", ["log_total_sulfur_dioxide"], offset="pH", weights="sulphates", standardize=std)
    out["poisson" + tag] = case(
        P, "free_sulfur_dioxide", ["total_sulfur_dioxide", "log_total_sulfur_dioxide"], standardize=std)
    out["poisson_offset_weights" + tag] = case(
        P, "free_sulfur_dioxide", ["total_sulfur_dioxide"], offset="log_total_sulfur_dioxide",
        weights="sulphates", standardize=std)
# Likelihood-ratio tests without citric_acid and residual_sugar (statsmodels' llf of both fits;
# the Gaussian's llf maximises over the dispersion too).
for fam, name, label, leave_out in [
        (G, "gaussian", "alcohol", ["log_total_sulfur_dioxide"]),
        (P, "poisson", "free_sulfur_dioxide", ["total_sulfur_dioxide", "log_total_sulfur_dioxide"])]:
    full = out[name]["log_likelihood"]
    reduced = case(fam, label, leave_out + ["citric_acid", "residual_sugar"])["log_likelihood"]
    out[name + "_lr"] = {"statistic": 2 * (full - reduced), "df": 2,
                         "p_value": float(__import__("scipy.stats").stats.chi2.sf(2 * (full - reduced), 2))}
json.dump(out, sys.stdout, indent=1)
print()
