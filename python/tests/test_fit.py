"""privlogit's Python package against scikit-learn (issue 18)."""
import pathlib

import numpy as np
import pytest

import privlogit

ROOT = pathlib.Path(__file__).resolve().parents[2]

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402


def standardised_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_estimator_equals_sklearn(C, fit_intercept):
    # scikit-learn's meaning of fit_intercept: True fits an unpenalised intercept, False none.
    # Newton-Cholesky to 1e-12; 1e-6 is the tolerance.
    X, y = standardised_breast_cancer()
    ours = privlogit.PrivLogitRegression(C=C, fit_intercept=fit_intercept).fit(X, y, groups=np.arange(len(y)) % 3)
    ref = LogisticRegression(C=C, fit_intercept=fit_intercept, solver="newton-cholesky", tol=1e-12,
                             max_iter=1000).fit(X, y)
    assert np.max(np.abs(ours.coef_ - ref.coef_)) < 1e-6
    assert np.max(np.abs(ours.intercept_ - ref.intercept_)) < 1e-6
    assert np.allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)


def test_estimator_takes_sklearns_c_values():
    """C in (0, inf], as scikit-learn's own: inf is no penalty (on hospital A's first five
    columns, whose unpenalised maximum exists, it equals C = 1e12 to 1e-6); 0, a negative, a
    string and None are a ValueError."""
    X, y = privlogit.load(ROOT / "data" / "demo" / "hospital_a.csv", "label")[:2]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X = X[:, :5]
    free = privlogit.PrivLogitRegression(C=np.inf).fit(X, y)
    near = privlogit.PrivLogitRegression(C=1e12).fit(X, y)
    assert np.max(np.abs(free.coef_ - near.coef_)) < 1e-6
    for bad in (0, -1.0, "1", None):
        with pytest.raises(ValueError, match="'C' parameter"):
            privlogit.PrivLogitRegression(C=bad).fit(X, y)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_estimator_penalises_the_intercept_when_asked(C):
    # The dissertation's eq. 2.10: scikit-learn without its own intercept, on X with a column
    # of ones, so the intercept is penalised as the other coefficients.
    X, y = standardised_breast_cancer()
    ours = privlogit.PrivLogitRegression(C=C, penalize_intercept=True).fit(X, y, groups=np.arange(len(y)) % 3)
    ones = np.hstack([np.ones((len(y), 1)), X])
    ref = LogisticRegression(C=C, fit_intercept=False, solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(ones, y)
    got = np.concatenate([ours.intercept_, ours.coef_[0]])
    assert np.max(np.abs(got - ref.coef_[0])) < 1e-6
    assert np.allclose(ours.predict_proba(X), ref.predict_proba(ones), atol=1e-6)


def test_the_command_line_agrees(tmp_path):
    # `privlogit fit --free-intercept` is the estimator's default model; without the flag, its
    # penalize_intercept=True (same data file, Newton, lambda 1 = 1 / C).
    import subprocess, json
    X, y = standardised_breast_cancer()
    path = tmp_path / "data.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{j}" for j in range(X.shape[1])] + ["label"]))
    binary = ROOT / "target" / "release" / "privlogit"
    if not binary.exists():
        pytest.skip("the command line is not built")
    for flags, estimator in ([["--free-intercept"], privlogit.PrivLogitRegression(C=1.0)],
                             [[], privlogit.PrivLogitRegression(C=1.0, penalize_intercept=True)]):
        out = subprocess.run([binary, "fit", "--party", path, "--label", "label", "--optimizer", "newton", "--json",
                              "--quiet", *flags], capture_output=True, text=True, check=True)
        cli = np.asarray(json.loads(out.stdout)["coefficients"])
        est = estimator.fit(X, y)
        assert np.max(np.abs(cli - np.concatenate([est.intercept_, est.coef_[0]]))) < 1e-6


def test_fit_refuses_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        privlogit.fit([(np.zeros(3), np.zeros(3))])


@pytest.mark.parametrize("call", ["fit", "study", "plr"])
def test_bad_labels_and_values_raise_data_error_not_a_panic(call):
    # Labels 1/2 panicked inside Rust (PanicException, which `except Exception` misses) in fit
    # and study, and dp.plr returned a model; NaN reached the optimiser. Each is refused at the
    # boundary as a file with them would be, naming the row and column.
    from privlogit import dp

    X, y = standardised_breast_cancer()
    run = {
        "fit": lambda X, y: privlogit.fit([(X[:300], y[:300]), (X[300:], y[300:])]),
        "study": lambda X, y: privlogit.study([(X[:300], y[:300]), (X[300:], y[300:])]),
        "plr": lambda X, y: dp.plr(X, y, epsilon=1.0, seed=1),
    }[call]
    with pytest.raises(privlogit.DataError, match=r"row \d+, label 2 is not 0 or 1"):
        run(X, y.astype(float) + 1.0)
    Xn = X.copy()
    Xn[4, 2] = np.nan
    with pytest.raises(privlogit.DataError, match=r"row 5, column 3.*NaN is not a finite number"):
        run(Xn, y.astype(float))


def test_study_equals_fit_with_the_same_optimiser():
    # The tolerance, 1e-6; secure Newton tracks plaintext Newton to about 1e-12 in the
    # Rust tests.
    # The first six features: secure Newton inverts the masked Hessian every iteration, at a
    # cost cubic in the width; the Rust tests run it on all 30.
    X, y = standardised_breast_cancer()
    X = X[:, :6]
    parties = [(X[k::3], y[k::3].astype(float)) for k in range(3)]
    plain = privlogit.fit(parties, optimizer="newton", lam=1.0, standardize=False)
    secure = privlogit.study(parties, protocol="newton", optimizer="newton", lam=1.0, standardize=False)
    assert secure["n_iter"] == plain["n_iter"]
    cost = secure["cost"]
    assert cost["rounds"] >= secure["n_iter"] and len(cost["bytes_from_each_node"]) == 3
    assert sum(cost["bytes_from_each_node"]) == cost["bytes_from_nodes"] > 0
    assert np.max(np.abs(secure["coef"] - plain["coef"])) < 1e-6


def test_check_estimator_passes():
    # scikit-learn's own conformance suite (binary-only classifier tag); pandas is installed
    # in CI so the not-an-array check runs too.
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(privlogit.PrivLogitRegression(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed
    assert sum(r["status"] == "passed" for r in results) >= 55


def test_errors_carry_the_command_lines_message(cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\n1,2,0\n3,x,1\n")
    with pytest.raises(privlogit.DataError) as raised:
        privlogit.load(bad, "label")
    assert str(raised.value) == f'{bad}:3:2: "x" in column "b" is not a finite number'
    shell = cli("fit", "--party", bad, "--label", "label", ok=False)
    assert shell.stderr.strip() == f"error: {raised.value}"
    missing = tmp_path / "missing.csv"
    with pytest.raises(privlogit.DataError) as raised:
        privlogit.load(missing, "label")
    shell = cli("fit", "--party", missing, "--label", "label", ok=False)
    assert shell.stderr.strip() == f"error: {raised.value}"
    # Every refusal is a PrivlogitError, itself a ValueError.
    assert issubclass(privlogit.DataError, privlogit.PrivlogitError)
    assert issubclass(privlogit.PrivlogitError, ValueError)


def test_load_hands_numpy_the_memory_without_a_copy():
    X, y, names = privlogit.load(ROOT / "data" / "demo" / "hospital_a.csv", "label")
    assert X.shape == (190, 30) and y.shape == (190,) and len(names) == 30
    assert X.base is not None and X.flags.c_contiguous and X.flags.writeable
    X[0, 0] = 5.0  # numpy owns a view of the loaded memory, writable like any array
    assert X[0, 0] == 5.0



def test_a_secure_standardised_model_applies_to_raw_rows():
    # The study standardises with pooled statistics; its result carries them, and
    # predict_proba applies the model to raw rows. Reference: numpy, standardising by hand.
    # The first eight raw features (values from 0 to 2,501; `cli/tests/suite/cli.rs` applies a model of all
    # 30 through the command line).
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :8]
    parties = [(X[k::3], y[k::3].astype(float)) for k in range(3)]
    secure = privlogit.study(parties, protocol="local", lam=1.0, standardize=True, tol=0, gradient_tol=1e-8)
    plain = privlogit.fit(parties, lam=1.0, standardize=True, tol=0, gradient_tol=1e-8)
    z = (X - secure["mean"]) / secure["scale"]
    by_hand = 1.0 / (1.0 + np.exp(-(secure["coef"][0] + z @ secure["coef"][1:])))
    ours = privlogit.predict_proba(secure, X)
    assert np.max(np.abs(ours - by_hand)) < 1e-12
    # The secure model's predictions equal the plaintext model's (coefficients within 1e-8 / lambda).
    assert np.max(np.abs(ours - privlogit.predict_proba(plain, X))) < 1e-6
    with pytest.raises(privlogit.PrivlogitError, match="columns"):
        privlogit.predict_proba(secure, X[:, :5])


def test_study_ranks_held_out_rows_for_an_exact_auc(tmp_path):
    # The secure study's AUC (the three Nodes' held-out scores merged in a garbled circuit)
    # equals scikit-learn's roc_auc_score on the pooled held-out rows scored with the study's
    # coefficients: 1e-9, the tolerance (the scores agree to about 1e-15, and no two
    # held-out scores are that close).
    from sklearn.metrics import roc_auc_score
    X, y = standardised_breast_cancer()
    X = X[:, :6]
    names = [f"x{j}" for j in range(X.shape[1])]
    train, test = [], []
    for k in range(3):
        for part, rows in (("train", slice(k, 450, 3)), ("test", slice(450 + k, None, 3))):
            path = tmp_path / f"{part}{k}.csv"
            np.savetxt(path, np.column_stack([X[rows], y[rows]]), delimiter=",",
                       header=",".join([*names, "label"]), comments="", fmt="%.17g")
            (train if part == "train" else test).append(path)
    out = privlogit.study(train, label="label", protocol="newton", lam=1.0, quiet=True, test_party=test)
    coef = np.asarray(out["coefficients"])
    p = 1 / (1 + np.exp(-(X[450:] @ coef[1:] + coef[0])))
    assert out["test_n"] == len(y) - 450
    assert abs(out["test_auc"] - roc_auc_score(y[450:], p)) < 1e-9


def test_newton_finish_keyword_takes_fewer_rounds_to_the_same_optimum():
    # breast_cancer's bound contracts at 0.9956 a round: the finish (the default) forms Newton
    # systems and takes fewer than half the rounds; both stop at gradient norm 1e-6, so within
    # 1e-6 / lambda of the optimum and of each other.
    files = [ROOT / "data" / "demo" / f"hospital_{h}.csv" for h in "abc"]
    on = privlogit.fit(files, standardize=True, label="label")
    off = privlogit.fit(files, standardize=True, label="label", newton_finish=False)
    assert on["newton_steps"] > 0 and off["newton_steps"] == 0
    assert 2 * on["rounds"] < off["rounds"]
    np.testing.assert_allclose(on["coef"], off["coef"], atol=2e-6)


def test_any_setting_of_the_fit_goes_by_its_name():
    # A setting without a keyword of its own (here `separation_probe`) is taken by name, as the
    # command line's flag: 0 reports the unpenalised fit where it stopped; by default breast_cancer's
    # separated classes are refused. A name that is no setting is refused with a suggestion.
    X, y = standardised_breast_cancer()
    parties = [(X[k::3], y[k::3]) for k in range(3)]
    common = dict(optimizer="privlogit", lam=0.0, max_iter=20)
    with pytest.warns(privlogit.ConvergenceWarning, match="stopped after 20 iterations"):
        stopped = privlogit.fit(parties, separation_probe=0, **common)
    assert stopped["status"] == "max_iterations" and stopped["iterations"] == 20
    with pytest.raises(privlogit.EstimationError, match="separated"):
        privlogit.fit(parties, **common)
    with pytest.raises(privlogit.SettingError, match="did you mean `separation_probe`"):
        privlogit.fit(parties, separation_prob=0, **common)
