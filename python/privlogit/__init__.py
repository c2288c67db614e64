"""privlogit: privacy-preserving logistic regression across organizations.

The computation is in Rust (`privlogit._native`, the crates the `privlogit` command is built
from); this layer passes numpy arrays (read in place, not copied) and offers a scikit-learn
estimator. Faults raise `PrivlogitError` (a ValueError) with the command line's message, or
one of its kinds: `DataError` for a file that cannot be read (file, line, column),
`SettingError` for a refused setting, `NetworkError` for a lost party or network (run again or
resume; the command line's exit status 5), `EstimationError` for a model the data cannot
estimate (separated classes, collinear columns), `BudgetExceeded` for a DP fit its ledger
refuses.

- `load`, `fit`, `study`: data files, the plaintext distributed fit, the secure study in this
  process (settings, defaults and checks are the library's, as on the command line);
  `study` and `node` take Spark and Dask DataFrames, summed on their partitions
  (`privlogit.cluster`);
- `keyholder`, `aggregator`, `node`, `dealer`: the roles of a study between organizations,
  from its study file over mutual TLS (a notebook can be a Node with a pandas DataFrame;
  `dealer` is the optional third server of a study file's `[dealer]` table);
- `predict_proba`, `predict`: a fit's or a study's model applied to raw rows (a DataFrame's
  columns by name); `load_model`: any model file the project writes;
- `PrivLogitRegression`: the scikit-learn estimator (needs scikit-learn);
- `privlogit.dp`: the differentially private methods and the privacy ledger;
- `privlogit.paillier`: Paillier keys and numbers, interoperable with python-paillier;
- `privlogit.accounting`: composition, amplification, RDP and zCDP (`privlogit dp account`).
"""
from __future__ import annotations

from . import _native, accounting, cluster, dp, paillier
from ._fit_and_study import aggregator, dealer, fit, keyholder, node, study
from ._native import BudgetExceeded, DataError, EstimationError, NetworkError, PrivlogitError, SettingError
from ._fit_and_study import ConvergenceWarning
from ._parties import _by_name, _party, load  # noqa: F401  (the two private names: for the tests)
from ._predict_rows import load_model, predict, predict_proba
from ._results import Result

__all__ = ["Result", "load", "fit", "study", "keyholder", "aggregator", "node", "dealer", "predict_proba", "predict", "load_model", "PrivLogitRegression", "PrivlogitError", "DataError", "SettingError", "NetworkError", "EstimationError", "BudgetExceeded", "ConvergenceWarning", "dp", "paillier", "accounting", "cluster"]


def __getattr__(name):
    # The estimator needs scikit-learn, which the rest of the package does not.
    if name == "PrivLogitRegression":
        try:
            from .estimator import PrivLogitRegression
        except ModuleNotFoundError as missing:
            if missing.name != "sklearn":
                raise
            raise ImportError(
                "privlogit.PrivLogitRegression needs scikit-learn: pip install scikit-learn "
                "(or install this package as './python[sklearn]')"
            ) from missing
        return PrivLogitRegression
    raise AttributeError(f"module 'privlogit' has no attribute {name!r}")
