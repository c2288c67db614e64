"""No input reaches a panic across the Python boundary: every bad argument of every entry point
raises a PrivlogitError (a ValueError) or a TypeError, never pyo3's PanicException (a
BaseException that `except Exception` misses)."""
import numpy as np
import pytest

import privlogit
from privlogit import dp

RNG = np.random.default_rng(1)
X = RNG.normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(float)
GOOD = (X, Y)


def cases(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    broken = tmp_path / "broken.toml"
    broken.write_text("lambda = [\n")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("lamda = 1\n")
    return {
        "fit: no parties": lambda: privlogit.fit([]),
        "fit: 1-D X": lambda: privlogit.fit([(Y, Y)]),
        "fit: 3-D X": lambda: privlogit.fit([(X[None], Y)]),
        "fit: lengths differ": lambda: privlogit.fit([(X, Y[:-1])]),
        "fit: strings": lambda: privlogit.fit([(np.array([["a", "b"]]), np.array([1.0]))]),
        "fit: columns differ": lambda: privlogit.fit([GOOD, (X[:, :2], Y)]),
        "fit: inf": lambda: privlogit.fit([(np.where(X > 1, np.inf, X), Y)]),
        "fit: label 0.5": lambda: privlogit.fit([(X, Y / 2)]),
        "fit: negative lambda": lambda: privlogit.fit([GOOD], lam=-1.0),
        "fit: NaN lambda": lambda: privlogit.fit([GOOD], lam=float("nan")),
        "fit: zero iterations": lambda: privlogit.fit([GOOD], max_iter=0),
        "fit: negative iterations": lambda: privlogit.fit([GOOD], max_iter=-1),
        "fit: unknown optimizer": lambda: privlogit.fit([GOOD], optimizer="adam"),
        "fit: zero memory": lambda: privlogit.fit([GOOD], memory=0),
        "fit: negative tolerance": lambda: privlogit.fit([GOOD], tol=-1.0),
        "fit: names differ in length": lambda: privlogit.fit([GOOD], names=["a"]),
        "study: unknown protocol": lambda: privlogit.study([GOOD], protocol="magic"),
        "study: small key": lambda: privlogit.study([GOOD], key_bits=1024),
        "study: odd key": lambda: privlogit.study([GOOD], key_bits=2500),
        "study: bad format": lambda: privlogit.study([GOOD], fixed="64"),
        "study: lambda 0": lambda: privlogit.study([GOOD], lam=0.0),
        "study: no parties": lambda: privlogit.study([]),
        "study: unknown setting": lambda: privlogit.study([GOOD], lamda=1.0),
        "study: setting of another role": lambda: privlogit.study([GOOD], listen="x"),
        "study: setting of the wrong type": lambda: privlogit.study([GOOD], max_iter="many"),
        "study: newton with accel": lambda: privlogit.study([GOOD], protocol="newton", optimizer="privlogit-accel"),
        "study: empty study file": lambda: privlogit.study(study_file=empty),
        "study: broken study file": lambda: privlogit.study(study_file=broken),
        "study: unknown key in file": lambda: privlogit.study(study_file=unknown),
        "study: missing study file": lambda: privlogit.study(study_file=tmp_path / "missing.toml"),
        "study: DataFrame without label=": lambda: privlogit.study([__import__("pandas").DataFrame(X)]),
        "keyholder: no identity": lambda: privlogit.keyholder(empty),
        "aggregator: no parties": lambda: privlogit.aggregator(empty, insecure_plaintext=True, listen="127.0.0.1:0"),
        "node: no data": lambda: privlogit.node(empty),
        "node: bad deadline": lambda: privlogit.node(empty, data=GOOD, names=["a", "b", "c"], insecure_plaintext=True,
                                                     deadline=-1.0),
        "node: no aggregator address": lambda: privlogit.node(empty, data=GOOD, names=["a", "b", "c"],
                                                             insecure_plaintext=True),
        "load: missing file": lambda: privlogit.load(tmp_path / "missing.csv", "label"),
        "predict_proba: wrong columns": lambda: privlogit.predict_proba({"names": ["x1"], "coef": [1.0]}, X),
        "dp: unknown method": lambda: dp.fit("magic", X, Y, 1.0),
        "dp: negative epsilon": lambda: dp.plr(X, Y, -1.0),
        "dp: option the method ignores": lambda: dp.plr(X, Y, 1.0, eta=0.3),
        "dp: K 0": lambda: dp.pst_f(X, Y, 1.0, k=0),
        "dp: bad combiner": lambda: dp.pst_s(X, Y, 1.0, combiner="average"),
        "dp: transfer without source": lambda: dp.fit("simcomb", X, Y, 1.0),
        "dp: dphtl with one source": lambda: dp.dphtl([GOOD], X, X, Y, 1.0),
        "dp: dphtl through fit": lambda: dp.fit("dphtl", X, Y, 1.0),
        "dl: no parties": lambda: dp.dpstgd([], 1.0),
        "dl: bad ratio": lambda: dp.dpstgd([GOOD], 1.0, q=2.0),
        "dl: zero hidden": lambda: dp.dpstgd([GOOD], 1.0, hidden=(0,)),
        # A newcomer's inputs (2026-11-29): each used to panic, pass silently or raise a bare
        # error naming nothing.
        "dp model: too few columns": lambda: dp.plr(X, Y, 1.0, seed=1).predict_proba(X[:, :2]),
        "dp model: too many columns": lambda: dp.pst_f(X, Y, 1.0, k=2, seed=1).predict_proba(np.column_stack([X, X])),
        "dp: infinite epsilon": lambda: dp.plr(X, Y, float("inf")),
        "dp: predict_proba NaN": lambda: dp.predict_proba(np.ones(3), np.where(X > 1.5, np.nan, X)),
        "fit: one path, not a list": lambda: privlogit.fit(str(tmp_path / "a.csv"), label="label"),
        "study: one pair, not a list": lambda: privlogit.study(GOOD),
        "fit: lam not a number": lambda: privlogit.fit([GOOD], lam="abc"),
        "fit: huge max_iter": lambda: privlogit.fit([GOOD], max_iter=2**70),
        "fit: object array": lambda: privlogit.fit([(np.array([[1, "a"]], dtype=object), np.array([1.0]))]),
        "predict_proba: no model": lambda: privlogit.predict_proba(None, X),
        "predict_proba: empty model": lambda: privlogit.predict_proba({}, X),
        "fit: label as a list": lambda: privlogit.fit([__import__("pandas").DataFrame(X).assign(y=Y)], label=["y"]),
    }


def test_every_bad_input_raises_an_exception_not_a_panic(tmp_path):
    pytest.importorskip("pandas")
    missed = []
    for name, call in cases(tmp_path).items():
        try:
            call()
        except (ValueError, TypeError):
            continue
        except BaseException as other:  # a PanicException lands here
            missed.append(f"{name}: {type(other).__module__}.{type(other).__name__}: {other}")
            continue
        missed.append(f"{name}: no error")
    assert not missed, "\n".join(missed)


def test_exceptions_say_the_kind_of_failure(tmp_path):
    """A refusal raises the subclass of PrivlogitError its kind calls for (the command line's
    exit statuses, docs/src/deployment.md, make the same split): a setting, the data, a model
    the data cannot estimate."""
    with pytest.raises(privlogit.SettingError, match="lambda"):
        privlogit.fit([GOOD], lam=-1.0)
    with pytest.raises(privlogit.SettingError, match="`max_iter`"):
        privlogit.fit([GOOD], max_iter="many")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,label\n1,0\nx,1\n")
    with pytest.raises(privlogit.DataError, match="bad.csv:3:1"):
        privlogit.fit([str(bad)], label="label")
    collinear = (np.column_stack([X, X[:, 0]]), (X[:, 1] > 0).astype(float))
    with pytest.raises(privlogit.EstimationError, match="collinear|combination"):
        privlogit.fit([collinear], lam=0.0)
    with pytest.raises(privlogit.DataError, match="missing.json"):
        privlogit.load_model(tmp_path / "missing.json")
    with pytest.raises(privlogit.PrivlogitError, match="directory .* does not exist"):
        dp.plr(X, Y, 1.0, ledger=dp.Ledger(tmp_path / "no" / "ledger.json", budget=1.0))
    for kind in (privlogit.SettingError, privlogit.DataError, privlogit.NetworkError,
                 privlogit.EstimationError, privlogit.BudgetExceeded):
        assert issubclass(kind, privlogit.PrivlogitError)


def test_messages_name_what_is_wrong():
    """The newcomer's vague messages: a DataFrame's non-numeric or repeated column is named, as is
    a keyword that is not a number, a DP model's width, and a party given without its list."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=Y)
    with pytest.raises(privlogit.DataError, match="party 2: column 'b' is not numeric"):
        privlogit.fit([frame, frame.assign(b="x")], label="label")
    with pytest.raises(privlogit.DataError, match="column 'a' appears more than once"):
        privlogit.fit([frame.rename(columns={"b": "a"})], label="label")
    with pytest.raises(privlogit.SettingError, match="lam: expected a number, got 'abc'"):
        privlogit.fit([GOOD], lam="abc")
    with pytest.raises(privlogit.DataError, match="the rows have 2 columns, the model reads 3 features"):
        dp.plr(X, Y, 1.0, seed=1).predict_proba(X[:, :2])
    with pytest.raises(privlogit.PrivlogitError, match="parties is one party; give a list"):
        privlogit.fit(GOOD)
    with pytest.raises(privlogit.PrivlogitError, match="must be positive and finite"):
        dp.plr(X, Y, float("inf"))


def test_an_unreadable_network_setting_is_refused_when_the_module_loads():
    # As the command line refuses it at its start; the library itself prints nothing.
    import os, subprocess, sys
    env = dict(os.environ, PRIVLOGIT_LATENCY="fast")
    run = subprocess.run([sys.executable, "-c", "import privlogit"], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "SettingError" in run.stderr and "PRIVLOGIT_LATENCY" in run.stderr, run.stderr
