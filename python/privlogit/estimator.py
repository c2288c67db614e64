"""`PrivLogitRegression`: privlogit's fit as a scikit-learn classifier (needs scikit-learn)."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ._fit_and_study import ConvergenceWarning
from ._fit_and_study import fit as _fit


class PrivLogitRegression(ClassifierMixin, BaseEstimator):
    """l2-regularised logistic regression fitted by privlogit (binary labels).

    `C` is scikit-learn's inverse penalty: lam = 1 / C. `fit_intercept` has scikit-learn's
    meaning: True (the default) fits an intercept that is not penalised, False fits none, so
    `PrivLogitRegression(C, fit_intercept=...)` is `LogisticRegression(C, fit_intercept=...)`.
    `penalize_intercept=True` penalises the intercept like every coefficient, as the
    dissertation's eq. 2.10 (and `privlogit fit` without `--free-intercept`) does. `groups` in
    `fit` assigns rows to parties (default: one party); the result does not depend on it.

    The default optimizer is Newton's method, which reaches the optimum to rounding. The
    PrivLogit optimizers ("privlogit", "privlogit-accel") stop on the objective's relative
    change (the dissertation's rule), so their coefficients are accurate to about the square
    root of `tol`, not to `tol`.
    """

    def __init__(self, C=1.0, fit_intercept=True, penalize_intercept=False, optimizer="newton", tol=1e-10,
                 max_iter=10_000):
        self.C = C
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.optimizer = optimizer
        self.tol = tol
        self.max_iter = max_iter

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, groups=None):
        # scikit-learn's rule for its own C: a positive number, inf for no penalty (ValueError
        # otherwise).
        if isinstance(self.C, bool) or not isinstance(self.C, (int, float, np.integer, np.floating)) \
                or not self.C > 0:
            raise ValueError(f"The 'C' parameter of PrivLogitRegression must be a float in the range (0, inf]; "
                             f"got {self.C!r}")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind != "binary":
            # scikit-learn's wording for a binary-only classifier (check_estimator tests it).
            raise ValueError(f"Only binary classification is supported. The type of the target is {kind}.")
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"y: only one class ({self.classes_[0]!r}) is present; privlogit needs both")
        y01 = (y == self.classes_[1]).astype(np.float64)
        if groups is None:
            parties = [(X, y01)]
        else:
            groups = np.asarray(groups)
            if groups.shape != (X.shape[0],):
                raise ValueError(f"groups: expected one group per row ({X.shape[0]}), got shape {groups.shape}")
            parties = [(X[groups == g], y01[groups == g]) for g in np.unique(groups)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            out = _fit(parties, self.optimizer, 1.0 / self.C, standardize=False, intercept=bool(self.fit_intercept),
                       tol=self.tol, max_iter=self.max_iter, penalize_intercept=bool(self.penalize_intercept),
                       gradient_tol=0)
        for w in caught:
            # scikit-learn's own class, which its users filter and its checks expect.
            category = SklearnConvergenceWarning if issubclass(w.category, ConvergenceWarning) else w.category
            warnings.warn(str(w.message), category, stacklevel=2)
        if self.fit_intercept:
            self.intercept_ = np.array([out["coef"][0]])
            self.coef_ = out["coef"][1:].reshape(1, -1)
        else:
            self.intercept_ = np.zeros(1)
            self.coef_ = out["coef"].reshape(1, -1)
        self.n_iter_ = np.array([out["n_iter"]])
        return self

    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X):
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    def predict(self, X):
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]
