"""Models by name (issue 51): `predict_proba` matches a DataFrame's columns by name as `privlogit
predict` matches a file's, and `load_model` reads every model file the project writes, giving the
probabilities the command line gives on the same rows.

Reference: `privlogit predict` (the release binary) on the same file; tolerance 1e-12 (the two
apply one model with the same arithmetic, the CLI printing 17 significant digits)."""
import json
import pathlib

import numpy as np
import pytest

import privlogit

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = [ROOT / "data" / "demo" / f"hospital_{h}.csv" for h in "abc"]


def cli_probabilities(cli, model, data):
    out = cli("predict", "--model", model, "--data", data).stdout.split()
    assert out[0] in ("probability", "mean")
    return np.array([float(v) for v in out[1:]])


def test_dataframe_columns_are_matched_by_name():
    pd = pytest.importorskip("pandas")
    result = privlogit.fit(DEMO, label="label", standardize=True)
    frame = pd.read_csv(DEMO[2]).drop(columns="label")
    p = privlogit.predict_proba(result, frame)
    # Reversed columns: the same probabilities (they used to be off by up to 0.99999999).
    assert np.array_equal(privlogit.predict_proba(result, frame[frame.columns[::-1]]), p)
    assert np.array_equal(privlogit.predict(result, frame[frame.columns[::-1]]), p)
    with pytest.raises(privlogit.PrivlogitError, match="missing mean_radius"):
        privlogit.predict_proba(result, frame.drop(columns="mean_radius"))
    with pytest.raises(privlogit.PrivlogitError, match="not features of the model: extra"):
        privlogit.predict_proba(result, frame.assign(extra=1.0))
    # An array must be in the model's order; a wrong count is refused.
    assert np.array_equal(privlogit.predict_proba(result, frame.to_numpy()), p)
    with pytest.raises(privlogit.PrivlogitError, match="columns"):
        privlogit.predict_proba(result, frame.to_numpy()[:, 1:])


def test_load_model_reads_every_model_file_kind(cli, tmp_path):
    parties = [a for f in DEMO for a in ("--party", f)]
    files = {
        "fit": ["fit", *parties, "--label", "label", "--standardize", "--json"],
        "fit_raw": ["fit", *parties, "--label", "label", "--json"],
        "study": ["study", *parties, "--label", "label", "--standardize", "--json", "--quiet"],
        "gaussian": ["fit", *parties, "--label", "mean_radius", "--family", "gaussian", "--json",
                     "--exclude", "label"],
    }
    for name, args in files.items():
        cli(*args, "--out", tmp_path / f"{name}.json")
    dp = {"plr": [], "output": [], "pst-s": [], "pst-f": [], "plr-fs": [],
          "simcomb": ["--source", DEMO[1]], "pst-h": ["--source", DEMO[1]]}
    for method, extra in dp.items():
        cli("dp", "fit", "--method", method, "--data", DEMO[0], "--label", "label", "--epsilon", 1,
            "--seed", 3, *extra, "--out", tmp_path / f"dp_{method}.json")
    cli("dp", "fit", "--method", "dphtl", "--data", DEMO[0], "--label", "label", "--epsilon", 1,
        "--seed", 3, "--source", DEMO[1], "--source", DEMO[2], "--public", DEMO[2],
        "--out", tmp_path / "dp_dphtl.json")
    pd = pytest.importorskip("pandas")
    rows = pd.read_csv(DEMO[2])
    kinds = set()
    for path in sorted(tmp_path.glob("*.json")):
        model = privlogit.load_model(path)
        ours = privlogit.predict(model, rows.drop(columns=[c for c in rows.columns
                                                         if c not in _features(model)]))
        theirs = cli_probabilities(cli, path, DEMO[2])
        assert np.max(np.abs(ours - theirs)) < 1e-12, path.name
        kinds.add(type(model).__name__)
    assert kinds == {"Result", "Model"}
    # A DP model read back has the method's own name, as a fit in Python has (files written
    # before carried `psts`; they still read as `pst-s`).
    for method in dp:
        assert privlogit.load_model(tmp_path / f"dp_{method}.json").method == method
    legacy = tmp_path / "dp_pst-s.json"
    legacy.write_text(legacy.read_text().replace('"method": "pst-s"', '"method": "psts"'))
    assert privlogit.load_model(legacy).method == "pst-s"
    # A result loaded from its file is the one `fit` returns.
    fit = privlogit.load_model(tmp_path / "fit.json")
    assert fit["names"][0] == "intercept" and fit["coef"].shape == (31,)
    with pytest.raises(privlogit.PrivlogitError, match="predicts a mean"):
        privlogit.predict_proba(privlogit.load_model(tmp_path / "gaussian.json"), rows)


def _features(model):
    if isinstance(model, privlogit.dp.Model):
        return model.features
    return [n for n in model["names"] if n != "intercept"]


def test_a_file_that_is_not_a_model_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"coefficients": [1.0]}))
    with pytest.raises(privlogit.PrivlogitError, match=r"bad\.json is not a model file"):
        privlogit.load_model(bad)


def test_an_empty_party_is_refused():
    pd = pytest.importorskip("pandas")
    a, b, c = (pd.read_csv(f) for f in DEMO)
    for call in (privlogit.fit, privlogit.study):
        with pytest.raises(privlogit.DataError, match="party 1 has no rows"):
            call([a.iloc[:0], b, c], label="label", standardize=True)


def test_parties_in_another_column_order_are_matched_by_name():
    pd = pytest.importorskip("pandas")
    a, b, c = (pd.read_csv(f) for f in DEMO)
    shuffled = b[b.columns[::-1]]
    one = privlogit.fit([a, b, c], label="label", standardize=True)
    other = privlogit.fit([a, shuffled, c], label="label", standardize=True)
    assert np.max(np.abs(one["coef"] - other["coef"])) < 1e-12


def test_a_nan_is_named_by_column_in_fit_and_study():
    pd = pytest.importorskip("pandas")
    a, b, c = (pd.read_csv(f) for f in DEMO)
    b.loc[3, "mean_area"] = float("nan")
    for call in (privlogit.fit, privlogit.study):
        with pytest.raises(privlogit.DataError, match=r'party 2: row 4, column 4 \("mean_area"\)'):
            call([a, b, c], label="label", standardize=True)


def test_a_dp_model_fitted_on_a_dataframe_matches_columns_by_name():
    """A DP model fitted on a DataFrame knows its features, as one read from its file does: a
    frame in another column order gives the same probabilities (it used to be read by position)."""
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(DEMO[0])
    X, y = frame.drop(columns="label"), frame["label"].to_numpy(dtype=float)
    model = privlogit.dp.plr(X, y, 1.0, seed=7)
    p = model.predict_proba(X)
    assert np.array_equal(model.predict_proba(X[X.columns[::-1]]), p)
    assert np.array_equal(privlogit.predict_proba(model, X[X.columns[::-1]]), p)
    with pytest.raises(privlogit.PrivlogitError, match="missing mean_radius"):
        model.predict_proba(X.drop(columns="mean_radius"))


def test_a_saved_result_is_a_model_file(cli, tmp_path):
    """`Result.save` writes what `--json` writes: `load_model` and `privlogit predict` read it and
    give the fit's probabilities (1e-12, as above); a hand-written file with coefficients and
    names only loads too."""
    result = privlogit.fit(DEMO, label="label", standardize=True)
    path = tmp_path / "model.json"
    result.save(path)
    loaded = privlogit.load_model(path)
    rows = privlogit.load(DEMO[1], "label")[0]
    p = privlogit.predict_proba(result, rows)
    assert np.max(np.abs(privlogit.predict_proba(loaded, rows) - p)) <= 1e-12
    assert np.max(np.abs(cli_probabilities(cli, str(path), str(DEMO[1])) - p)) <= 1e-12
    minimal = tmp_path / "minimal.json"
    minimal.write_text(json.dumps({"coefficients": [0.5, -1.0], "names": ["intercept", "mean_radius"]}))
    model = privlogit.load_model(minimal)
    radius = rows[:, :1]
    assert np.allclose(privlogit.predict_proba(model, radius), 1 / (1 + np.exp(-(0.5 - radius[:, 0]))), rtol=0, atol=1e-14)


def test_a_fit_that_stops_at_its_limit_warns():
    """As the command line prints its warning: a run stopped at `max_iter` raises
    `privlogit.ConvergenceWarning` (scikit-learn's own class from the estimator)."""
    with pytest.warns(privlogit.ConvergenceWarning, match="stopped after 2 iterations"):
        result = privlogit.fit(DEMO, label="label", standardize=True, max_iter=2)
    assert result["status"] == "max_iterations"
    sklearn = pytest.importorskip("sklearn")
    from sklearn.exceptions import ConvergenceWarning
    X, y, _ = privlogit.load(DEMO[0], "label")
    with pytest.warns(ConvergenceWarning):
        privlogit.PrivLogitRegression(max_iter=1, optimizer="privlogit").fit(X, y)


def test_a_tuple_of_frames_is_a_list_of_parties():
    """Two DataFrames in a tuple are two parties (only a bare `(X, y)` pair is refused)."""
    pd = pytest.importorskip("pandas")
    frames = tuple(pd.read_csv(f) for f in DEMO[:2])
    assert np.array_equal(privlogit.fit(frames, label="label")["coef"],
                          privlogit.fit(list(frames), label="label")["coef"])
    X, y, _ = privlogit.load(DEMO[0], "label")
    with pytest.raises(privlogit.PrivlogitError, match="parties is one party"):
        privlogit.fit((X, y))
