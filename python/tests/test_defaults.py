"""One default per setting: Python's keywords show the library's defaults, the same values the
command line's flags show (checked against `privlogit::settings::Spec::default` by the Rust
test `settings_args::tests::flag_defaults_are_the_librarys`)."""
import inspect
import re
import subprocess

import pytest

import privlogit
from privlogit import _native

# Python's keyword for a library key, where they differ: `lambda` is a Python keyword, and the
# switches are named by what they turn on.
KEYWORD = {"lambda": "lam", "no_intercept": "intercept", "free_intercept": "penalize_intercept",
           "no_newton_finish": "newton_finish"}
NEGATED = {"no_intercept", "free_intercept", "no_newton_finish"}


@pytest.mark.parametrize("function, reader", [(privlogit.fit, "fit"), (privlogit.study, "study")])
def test_python_keywords_take_the_librarys_defaults(function, reader):
    library = _native.defaults(reader)
    parameters = inspect.signature(function).parameters
    checked = 0
    for key, default in library.items():
        name = KEYWORD.get(key, key)
        if name not in parameters or default is None or isinstance(default, list):
            continue
        shown = parameters[name].default
        expected = (not default) if key in NEGATED else default
        assert shown == expected, f"{function.__name__}({name}=...) defaults to {shown!r}, the library to {expected!r}"
        checked += 1
    # The settings a user tunes most are among them.
    assert checked >= 8, checked
    for must in ("optimizer", "lam", "tol", "gradient_tol", "max_iter", "standardize"):
        assert must in parameters


def test_the_command_line_shows_the_same_defaults(cli):
    # `privlogit study --help` prints each flag's default as the library holds it.
    shown = cli("study", "--help").stdout
    library = _native.defaults("study")
    for key in ("protocol", "optimizer", "lambda", "tol", "gradient_tol", "max_iter", "key_bits", "fixed"):
        flag = "--" + key.replace("_", "-")
        # The flag's own help line (other flags' help may mention it).
        line = re.search(r"^\s+" + re.escape(flag) + r"\b.*$", shown, re.MULTILINE)
        assert line, flag
        match = re.search(r"\[default: ([^\]]+)\]", line.group(0))
        assert match, flag
        value = library[key]
        text = match.group(1)
        if isinstance(value, float):
            assert float(text) == value, (flag, text, value)
        else:
            assert text == str(value), (flag, text, value)


def test_dpstgd_keywords_take_the_librarys_defaults(cli):
    # privlogit.dp.dpstgd's keywords and `privlogit dl train --help` show privlogit::dl::DEFAULTS.
    from privlogit import dp

    library = _native.defaults("dl")
    parameters = inspect.signature(dp.dpstgd).parameters
    for key, value in library.items():
        shown = parameters[key].default
        assert (list(shown) if isinstance(value, list) else shown) == value, key
    help_text = cli("dl", "train", "--help").stdout
    sparse = _native.defaults("dl-sparse")
    for key in ("q", "upload_ratio", "iterations", "bound", "learning_rate", "delta", "accounting"):
        flag = "--" + key.replace("_", "-")
        block = help_text[re.search(rf"^\s*{flag}\b", help_text, re.M).start():]
        text = " ".join(re.search(r"\[default: ([^\]]+)\]", block).group(1).split())
        value = library[key]
        both = re.fullmatch(r"(\S+) for sparse-gaussian, (\S+) for dpstgd", text)
        if both:  # each mechanism's own default
            assert float(both.group(1)) == sparse[key] and float(both.group(2)) == value, (flag, text)
        elif key == "iterations":  # sparse-gaussian's follow epsilon
            assert text.endswith(f"dpstgd, {value}"), (flag, text)
        else:
            assert (float(text) == value) if isinstance(value, (int, float)) else (text == value), (flag, text)
    sig = inspect.signature(dp.sparse_gaussian).parameters
    for key, value in sparse.items():
        assert sig[key].default == value, key
