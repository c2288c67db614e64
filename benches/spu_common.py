"""What the SPU side-by-side scripts share (`spu_horizontal.py`, `spu_vertical.py`): sf-sml's
SGD LogisticRegression, the SS-LR of SecretFlow's tutorials, trained in SPU's in-process
simulator (two parties, SEMI2K over the 64-bit ring, SPU's default 18 fractional bits)."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# The repository, above benches/.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def missing(binary):
    """Why the side by side cannot run here (a message), or None when numpy, spu and sf-sml
    import and the privlogit binary is built."""
    try:
        import numpy  # noqa: F401
        import spu  # noqa: F401
        import sml  # noqa: F401
    except ImportError:
        return ("numpy, spu or sf-sml is not installed (pip install spu==0.9.5 pandas "
                "scikit-learn \"numpy<2\"; pip install --no-deps sf-sml)")
    if not os.path.isfile(binary):
        return f"{binary} is missing: build it first (cargo build --release)"
    return None


def refuse_or_skip(why, allow_skip):
    """The exit status of a run that cannot measure anything: 2 (an error), or 0 when asked to
    skip; says why on standard error either way."""
    print(f"{why}: {'skipped' if allow_skip else 'cannot run'}", file=sys.stderr)
    return 0 if allow_skip else 2


def arguments(doc):
    """The options both scripts take (--runs, --privlogit, --lambda, --json, --allow-skip); a
    script adds its own before `parse`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--privlogit", default=os.path.join(ROOT, "target", "release", "privlogit"))
    parser.add_argument("--lambda", dest="lam", type=float, default=1.0)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--allow-skip", action="store_true",
                        help="exit 0 when the side by side cannot run here (default: an error)")
    return parser


def parse(parser):
    """The options, and the exit status of a run that cannot measure anything here (None when
    it can)."""
    a = parser.parse_args()
    why = missing(a.privlogit)
    return a, (refuse_or_skip(why, a.allow_skip) if why else None)


def optima(fit, names):
    """The coefficients of privlogit's optimum with the intercept penalised and without (sml's
    objective); `fit(extra)` runs `privlogit fit` with `extra` arguments."""
    import numpy as np

    _, reference = fit([])
    if reference["names"][1:] != names:
        raise SystemExit(f"column order differs from privlogit's: {reference['names']} vs {names}")
    _, free = fit(["--free-intercept"])
    return np.array(reference["coefficients"]), np.array(free["coefficients"])


def alternate(runs, ours, configs, run_ours, run_spu):
    """Runs each privlogit command of `ours` (`run_ours(args)`) and each SPU configuration of
    `configs` (`run_spu(config)`) `runs` times, alternating; returns each one's seconds and its
    last result."""
    times = {k: [] for k in ours}
    times.update({k: [] for k in configs})
    results = {}
    for r in range(runs):
        print(f"run {r + 1} of {runs} ...", file=sys.stderr)
        for key, args in ours.items():
            seconds, results[key] = run_ours(args)
            times[key].append(seconds)
        for label, c in configs.items():
            seconds, results[label] = run_spu(c)
            times[label].append(seconds)
    return times, results


def timed_json(cmd):
    """Runs a privlogit command with `--json`: its wall seconds and its parsed output."""
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, json.loads(out)


def spu_fit(x, y, lam, epochs, learning_rate, batch_size, sig_type):
    """Trains on `x`, `y` with l2 penalty `lam` (sml: `C = 1 / lam`); returns the training's
    seconds and the coefficients in privlogit's order (the intercept first)."""
    import numpy as np
    import spu.libspu as libspu
    import spu.utils.simulation as spsim
    from sml.linear_model.logistic import LogisticRegression

    sim = spsim.Simulator.simple(2, libspu.ProtocolKind.SEMI2K, libspu.FieldType.FM64)

    def train(x, y):
        model = LogisticRegression(
            epochs=epochs,
            learning_rate=learning_rate,
            batch_size=batch_size,
            sig_type=sig_type,
            penalty="l2",
            C=1.0 / lam,
        )
        return model.fit(x, y).weights

    start = time.perf_counter()
    w = spsim.sim_jax(sim, train)(x, y.reshape(-1, 1))
    seconds = time.perf_counter() - start
    w = np.asarray(w).reshape(-1)
    # sml: features then the bias; privlogit: the intercept first.
    return seconds, np.concatenate([w[-1:], w[:-1]])


def report(times, results, iterations_header, iterations_of, json_path=None):
    """Prints the side by side as a Markdown table (medians of each tool's runs) and writes it as
    JSON to `json_path` when given; `iterations_of(result)` renders a tool's iteration count."""
    print(f"| tool | seconds | {iterations_header} | max abs distance from its objective's "
          "pooled optimum |")
    print("|---|---|---|---|")
    rows = []
    for label, t in times.items():
        res = results[label]
        print(f"| {label} | {statistics.median(t):.2f} | {iterations_of(res)} | {res['error']:.2e} |")
        rows.append(dict(tool=label, seconds=statistics.median(t), runs=t, **res))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(rows, f, indent=2)
