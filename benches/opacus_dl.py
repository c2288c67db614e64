"""Side by side: privlogit's distributed DP deep learning (`privlogit dl train --mechanism
sparse-gaussian`, 5 participants) against Opacus DP-SGD on the pooled rows, on the task of the
DPSTGD experiment (MNIST digits file, digit 8 against the rest, the network 784-50-20-2 with
ReLU and a softmax output).

Protocol. The 10,000 rows are shuffled by numpy (`default_rng(split).permutation`) into six
parts of 1,666: five participants and a held-out test part. Each method's settings are chosen
on split 0 from its grid below (by test AUC of split 0) and then reported on splits 1-3, which
tuning never saw. Privacy is (epsilon, delta = 1e-5), add/remove one row, each participant's
rows for privlogit, the pooled rows for Opacus (its RDP accountant; its PRV accountant too with
`--prv`). The two run alternately on the same files. AUC is computed here from the scores of
each trained network (privlogit's model file is evaluated by a numpy forward pass, an
independent check of its layout), bytes from each method's uploads.

    python benches/opacus_dl.py [--prv] [--only privlogit|opacus] [--defaults] [--json FILE]

The book's table (docs/src/results/dpstgd.md) came from `--only opacus --prv`, `--only
privlogit` and `--defaults` (records in results/dl_opacus/): about 25, 15 and 3 minutes on a
2-core machine.

Each side needs only its own packages: privlogit's side numpy, scikit-learn and the release
binary (`cargo build --release` first; `--privlogit PATH` for another), Opacus's side torch
(pip's default wheel, ~5.7 GB; it runs on the CPU) as well: `pip install opacus==1.6.0
scikit-learn`. A side that cannot run is an error (exit 2) that names what is missing, unless
`--allow-skip` asks to skip it (then exit 0 with "skipped" on standard error), so a run that
measured nothing never looks like a success.
"""

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ROOT.parent / "shared" / "data" / "mnist_digits.csv"
DELTA = 1e-5
PARTS = 6
HIDDEN = (50, 20)

# Settings searched on split 0: Opacus (learning rate, clipping norm, epochs, batch size) and
# privlogit (learning rate, clipping norm, sampling ratio q, iterations T).
OPACUS_GRID = {
    "lr": [0.5, 1.0, 2.0],
    "clip": [1.0],
    "epochs": [10, 30],
    "batch": [256, 1024],
}
PRIVLOGIT_GRID = {
    "lr": [0.5, 1.0],
    "clip": [1.0],
    "q": [0.1, 0.2],
    "iterations": [100, 300, 600],
}


def missing(side, binary):
    """Why `side` cannot run here, or None."""
    modules = ["numpy", "sklearn"] + (["torch", "opacus"] if side == "opacus" else [])
    for name in modules:
        try:
            __import__(name)
        except ImportError as e:
            return f"{side}: the Python package {name} is not installed ({e})"
    if side == "privlogit" and not Path(binary).is_file():
        return f"privlogit: {binary} is missing: build it first (cargo build --release)"
    return None


def load_digits():
    import numpy as np

    raw = np.loadtxt(DIGITS, delimiter=",", skiprows=1, dtype=np.int64)
    y = (raw[:, 0] == 8).astype(np.int64)
    # The values privlogit reads from the files written below (6 decimals).
    x = np.round(raw[:, 1:] / 255.0, 6)
    return x, y


def split(n, seed):
    import numpy as np

    order = np.random.default_rng(seed).permutation(n)
    size = n // PARTS
    return [order[k * size:(k + 1) * size] for k in range(PARTS)]


def write_parts(directory, x, y, parts):
    import numpy as np

    header = "label," + ",".join(f"px{j}" for j in range(x.shape[1]))
    paths = []
    for k, rows in enumerate(parts):
        path = Path(directory) / f"part{k}.csv"
        table = np.column_stack([y[rows], x[rows]])
        fmt = ["%d"] + ["%.6f"] * x.shape[1]
        np.savetxt(path, table, delimiter=",", header=header, comments="", fmt=fmt)
        paths.append(path)
    return paths


def auc(scores, labels):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores))


def forward_scores(params, x):
    """The privlogit network's score (logit of class 1 minus class 0), from the flat parameter
    vector: per layer the weights row by row (one row per output unit), then the biases."""
    import numpy as np

    sizes = [x.shape[1], *HIDDEN, 2]
    a = x
    offset = 0
    for layer, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        w = np.asarray(params[offset:offset + fan_in * fan_out]).reshape(fan_out, fan_in)
        offset += fan_in * fan_out
        b = np.asarray(params[offset:offset + fan_out])
        offset += fan_out
        a = a @ w.T + b
        if layer < len(sizes) - 2:
            a = np.maximum(a, 0.0)
    assert offset == len(params), "parameter count"
    return a[:, 1] - a[:, 0]


def privlogit_run(binary, files, test, epsilon, setting, seed, workdir):
    """Trains with `privlogit dl train`; returns the AUC, seconds, bytes up and down per
    participant, and the sound epsilon the run reports."""
    model = Path(workdir) / "model.json"
    cmd = [
        str(binary), "dl", "train", "--party", *map(str, files), "--label", "label",
        "--mechanism", "sparse-gaussian", "--delta", str(DELTA),
        "--seed", str(seed), "--out", str(model), "--report-every", "1000000",
    ]
    # An empty setting runs privlogit's defaults.
    for key, flag in (("q", "--q"), ("iterations", "--iterations"), ("clip", "--bound"),
                      ("lr", "--learning-rate")):
        if key in setting:
            cmd += [flag, str(setting[key])]
    cmd += ["--non-private"] if epsilon is None else ["--epsilon", str(epsilon)]
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"privlogit failed: {run.stderr[-2000:]}")
    m = json.loads(model.read_text())
    x, y = test
    return {
        "auc": auc(forward_scores(m["parameters"], x), y),
        "seconds": seconds,
        "bytes_up": m["traffic"]["up_per_participant"],
        "bytes_down": m["traffic"]["down_per_participant"],
        "epsilon_sound": None if m.get("spend_sound") is None else m["spend_sound"][0],
    }


def opacus_run(train, test, epsilon, setting, seed, accountant):
    """Trains the same network with Opacus DP-SGD (Poisson sampling) on the pooled rows;
    returns the AUC, seconds, the bytes a participant of federated DP-SGD would send and
    receive (each step's gradient and parameters as float32), and the epsilon Opacus'
    accountant reports."""
    import numpy as np
    import torch
    from opacus import PrivacyEngine
    from torch import nn

    torch.manual_seed(seed)
    x, y = train
    tx, ty = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(tx, ty), batch_size=setting["batch"], shuffle=True)
    model = nn.Sequential(
        nn.Linear(x.shape[1], HIDDEN[0]), nn.ReLU(), nn.Linear(HIDDEN[0], HIDDEN[1]), nn.ReLU(),
        nn.Linear(HIDDEN[1], 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=setting["lr"])
    start = time.perf_counter()
    spent = None
    steps = 0
    if epsilon is not None:
        engine = PrivacyEngine(accountant=accountant)
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=epsilon,
            target_delta=DELTA, epochs=setting["epochs"], max_grad_norm=setting["clip"])
    loss = nn.CrossEntropyLoss()
    for _ in range(setting["epochs"]):
        for bx, by in loader:
            if len(bx) == 0:
                continue
            optimizer.zero_grad()
            loss(model(bx), by).backward()
            optimizer.step()
            steps += 1
    if epsilon is not None:
        spent = engine.get_epsilon(DELTA)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        out = model(torch.tensor(test[0], dtype=torch.float32)).numpy()
    params = sum(p.numel() for p in model.parameters())
    return {
        "auc": auc(out[:, 1] - out[:, 0], test[1]),
        "seconds": seconds,
        # Federated DP-SGD: each step a participant sends its noisy gradient and receives the
        # parameters, every one as float32.
        "bytes_up": 4 * params * steps,
        "bytes_down": 4 * params * steps,
        "epsilon": spent,
        "steps": steps,
    }


def grid(space):
    keys = list(space)
    return [dict(zip(keys, values)) for values in itertools.product(*space.values())]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--privlogit", default=str(ROOT / "target" / "release" / "privlogit"))
    parser.add_argument("--epsilons", default="1,3,8,none")
    parser.add_argument("--tune-split", type=int, default=0)
    parser.add_argument("--splits", default="1,2,3")
    parser.add_argument("--prv", action="store_true", help="also Opacus with its PRV accountant")
    parser.add_argument("--json", help="write every run here")
    parser.add_argument("--only", choices=["privlogit", "opacus"], help="run one side only")
    parser.add_argument("--defaults", action="store_true",
                        help="privlogit with its default settings only (no tuning)")
    parser.add_argument("--allow-skip", action="store_true",
                        help="exit 0 when a side cannot run here (default: an error)")
    args = parser.parse_args()
    sides = ["privlogit", "opacus"] if args.only is None else [args.only]
    if args.defaults:
        sides = ["privlogit"]
    reasons = [why for why in (missing(side, args.privlogit) for side in sides) if why]
    if reasons:
        for why in reasons:
            print(f"{why}: {'skipped' if args.allow_skip else 'cannot run'}", file=sys.stderr)
        return 0 if args.allow_skip else 2
    import numpy as np

    if "opacus" in sides:
        import torch

        torch.set_num_threads(1)
    x, y = load_digits()
    epsilons = [None if e == "none" else float(e) for e in args.epsilons.split(",")]
    splits = [int(s) for s in args.splits.split(",")]
    record = {"runs": []}

    def on_split(seed, run):
        parts = split(len(y), seed)
        train_rows = np.concatenate(parts[:-1])
        test = (x[parts[-1]], y[parts[-1]])
        with tempfile.TemporaryDirectory() as tmp:
            files = write_parts(tmp, x, y, parts[:-1])
            return run(files, (x[train_rows], y[train_rows]), test, tmp)

    def one(side, files, train, test, tmp, epsilon, setting, seed, accountant="rdp"):
        if side == "privlogit":
            return privlogit_run(args.privlogit, files, test, epsilon, setting, seed, tmp)
        return opacus_run(train, test, epsilon, setting, seed, accountant)

    # Tuning on one split: each side's best setting per epsilon, alternating the sides.
    chosen = {}

    def tune(files, train, test, tmp):
        for epsilon in epsilons:
            best = {}
            spaces = {"privlogit": grid(PRIVLOGIT_GRID), "opacus": grid(OPACUS_GRID)}
            for k in range(max(len(s) for s in spaces.values())):
                for side in sides:
                    if k >= len(spaces[side]):
                        continue
                    setting = spaces[side][k]
                    r = one(side, files, train, test, tmp, epsilon, setting, args.tune_split)
                    print(f"tune eps={epsilon} {side} {setting}: AUC {r['auc']:.4f} "
                          f"({r['seconds']:.1f} s)", file=sys.stderr, flush=True)
                    if side not in best or r["auc"] > best[side][0]:
                        best[side] = (r["auc"], setting)
            for side in sides:
                chosen[(side, epsilon)] = best[side][1]

    if args.defaults:
        for epsilon in epsilons:
            chosen[("privlogit", epsilon)] = {}
    else:
        on_split(args.tune_split, tune)
    results = {}

    def report(files, train, test, tmp, seed):
        for epsilon in epsilons:
            for side in sides:
                accountants = ["rdp", "prv"] if side == "opacus" and args.prv else ["rdp"]
                for acc in accountants:
                    setting = chosen[(side, epsilon)]
                    r = one(side, files, train, test, tmp, epsilon, setting, seed, acc)
                    name = side if acc == "rdp" else f"{side} (PRV)"
                    if args.defaults:
                        name = "privlogit (defaults)"
                    results.setdefault((name, epsilon), []).append(r)
                    record["runs"].append({"side": name, "epsilon": epsilon, "split": seed,
                                           "setting": setting, **r})
                    print(f"split {seed} eps={epsilon} {name}: AUC {r['auc']:.4f}",
                          file=sys.stderr, flush=True)

    for seed in splits:
        on_split(seed, lambda f, tr, te, tmp, s=seed: report(f, tr, te, tmp, s))

    print(f"| sound epsilon (delta {DELTA:g}) | method | settings (tuned on split "
          f"{args.tune_split}) | test AUC, mean of splits {args.splits} | bytes per "
          "participant, up / down |")
    print("|---|---|---|---|---|")
    for epsilon in epsilons:
        for name in [n for n, e in results if e == epsilon]:
            runs = results[(name, epsilon)]
            mean = float(np.mean([r["auc"] for r in runs]))
            up = float(np.mean([r["bytes_up"] for r in runs]))
            side = name.split(" ")[0]
            down = float(np.mean([r["bytes_down"] for r in runs]))
            print(f"| {'non-private' if epsilon is None else epsilon} | {name} | "
                  f"{chosen[(side, epsilon)] or 'defaults'} | {mean:.4f} | {up / 1e6:.2f} MB / "
                  f"{down / 1e6:.2f} MB |")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
