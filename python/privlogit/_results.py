"""`Result`, what a fit and a study return: the `--json` fields with numpy arrays, the
command line's table and a pandas DataFrame; `load_model` reads the same from a file."""
from __future__ import annotations

import json
import os

import numpy as np

import privlogit._native as _native
from ._native import PrivlogitError


class Result(dict):
    """A fit's or a study's result: the `--json` fields as a dict (with `coef` and friends as
    numpy arrays), plus the inference table as text (`summary()`, the command line's) and as a
    pandas DataFrame (`to_frame()`)."""

    def __init__(self, text):
        super().__init__(json.loads(text))
        self._text = text

    def save(self, path):
        """Writes the result as the command line's `--json` writes it (atomically: a temporary
        file renamed into place), for `privlogit predict --model`, `load_model` or a colleague.
        (`json.dump` cannot write the numpy arrays this dict adds.)"""
        path = os.fspath(path)
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as f:
                f.write(self._text)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)

    def summary(self):
        """The table laid out like statsmodels' `summary()`: fit measures, then per coefficient
        the estimate, standard error, z, p-value and interval, and the odds ratios."""
        return _native.summary(self._text)

    def to_frame(self, raw=False):
        """One row per coefficient (index: the names): `coef`, and when the result has them
        `std_err`, `z` (`t` for a Gaussian model), `p_value`, `ci_low`, `ci_high`, for a logistic
        model `odds_ratio`, `or_low`, `or_high`, for a Poisson model `rate_ratio`, `rr_low`,
        `rr_high`. A standardised result's coefficients are per pooled standard deviation of each
        feature; `raw=True` gives the same table per unit of each feature (`raw_units`)."""
        import pandas as pd

        table = self
        if raw:
            if "raw_units" not in self:
                raise PrivlogitError("to_frame(raw=True): this result has no raw-unit table (a standardised "
                                     "fit or study with standard errors has one; an unstandardised one is in raw units already)")
            table = self["raw_units"]
        columns = {"coef": table["coefficients"]}
        if "standard_errors" in table:
            columns.update({
                "std_err": table["standard_errors"],
                # "t" for a Gaussian model (estimated dispersion), as statsmodels names it.
                table.get("statistic", "z"): table["z_values"],
                "p_value": table["p_values"],
                "ci_low": [c[0] for c in table["conf_int"]],
                "ci_high": [c[1] for c in table["conf_int"]],
            })
        for ratio, short in (("odds_ratio", "or"), ("rate_ratio", "rr")):
            if f"{ratio}s" in table:
                # JSON writes a ratio past float range as null: infinity here.
                inf = float("inf")
                columns.update({
                    ratio: [inf if v is None else v for v in table[f"{ratio}s"]],
                    f"{short}_low": [inf if c[0] is None else c[0] for c in table[f"{ratio}_conf_int"]],
                    f"{short}_high": [inf if c[1] is None else c[1] for c in table[f"{ratio}_conf_int"]],
                })
        return pd.DataFrame(columns, index=pd.Index(self["names"], name="name"))


def _with_arrays(text):
    """A result's coefficients (and pooled statistics) as numpy arrays, with the short names
    earlier releases returned (`coef`, `n_iter`, `mean`, `scale`)."""
    out = Result(text)
    out["coef"] = np.asarray(out["coefficients"])
    # A hand-written model file may carry coefficients and names only.
    out["n_iter"] = out.get("iterations")
    std = out.get("standardization")
    if std:
        out["mean"], out["scale"] = np.asarray(std["means"]), np.asarray(std["scales"])
    return out
