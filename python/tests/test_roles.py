"""A notebook as a Node of a study between organizations: the key holder and the aggregator run
as `privlogit` processes, two hospitals as `privlogit node`, and the third hospital from Python
with its rows in a pandas DataFrame, all over mutual TLS with the identities the study file
names. The model equals the in-process study's on the same rows (same plan, same mask seed)."""
import os
import pathlib
import queue
import re
import socket
import subprocess
import threading

import numpy as np
import pytest

import privlogit

pd = pytest.importorskip("pandas")
ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
HOSPITALS = ["hospital-a", "hospital-b", "hospital-c"]


class Process:
    """A `privlogit` process whose standard error is read line by line."""

    def __init__(self, binary, *args):
        # The roles take --seed on their command lines only under this variable (tests only).
        env = {**os.environ, "PRIVLOGIT_INSECURE_TEST_SEEDS": "1"}
        self.proc = subprocess.Popen([str(binary), *map(str, args)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, text, seconds=60):
        while True:
            line = self.lines.get(timeout=seconds)
            self.seen.append(line)
            if text in line:
                return line

    def finish(self, seconds=120):
        self.proc.wait(timeout=seconds)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        assert self.proc.returncode == 0, "".join(self.seen)


def narrow_hospitals(directory, features=4):
    """The demo hospitals' first `features` columns and the label, as DataFrames and files: the
    study's width only adds time here (the Rust deployment tests do the same)."""
    frames = {}
    for h in "abc":
        whole = pd.read_csv(DEMO / f"hospital_{h}.csv")
        frames[h] = whole[[*whole.columns[:features], "label"]]
        frames[h].to_csv(directory / f"hospital_{h}.csv", index=False)
    return frames


def study_file(cli, directory, settings):
    """A study file in `directory` with `settings` (TOML lines) and a fresh identity for every
    party, named by fingerprint."""
    fingerprints = {}
    for name in ["keyholder", "aggregator", *HOSPITALS]:
        fingerprints[name] = cli("identity", "new", "--name", name, "--out", directory).stdout.strip()
    text = settings
    text += f'[keyholder]\nfingerprint = "{fingerprints["keyholder"]}"\n'
    text += f'[aggregator]\nfingerprint = "{fingerprints["aggregator"]}"\n'
    for h in HOSPITALS:
        text += f'[[node]]\nname = "{h}"\nfingerprint = "{fingerprints[h]}"\n'
    study = directory / "study.toml"
    study.write_text(text)
    return study


def servers(binary, study, directory):
    """The key holder and the aggregator of `study` as `privlogit` processes on loopback (the
    aggregator's mask seed 7, its result to `model.json` in `directory`): both processes, the
    address the Nodes dial and the result's path."""
    keyholder = Process(binary, "keyholder", "--study", study, "--identity", directory / "keyholder",
                        "--listen", "127.0.0.1:0", "--state", directory / "state-k")
    keyholder_address = re.search(r"listening on (\S+)", keyholder.wait_for("listening on")).group(1)
    result = directory / "model.json"
    aggregator = Process(binary, "aggregator", "--study", study, "--identity", directory / "aggregator",
                         "--listen", "127.0.0.1:0", "--keyholder", keyholder_address, "--state",
                         directory / "state-a", "--seed", "7", "--json", "--out", result)
    address = re.search(r"listening on (\S+),", aggregator.wait_for("listening on")).group(1)
    return keyholder, aggregator, address, result


def test_a_python_node_with_a_dataframe_joins_cli_servers_over_tls(cli, tmp_path):
    binary = ROOT / "target" / "release" / "privlogit"
    frames = narrow_hospitals(tmp_path)
    study = study_file(cli, tmp_path, 'label = "label"\nstandardize = true\noptimizer = "privlogit-accel"\n'
                                      'gradient_tol = 1e-8\n')

    keyholder, aggregator, address, result = servers(binary, study, tmp_path)
    nodes = [Process(binary, "node", "--study", study, "--identity", tmp_path / h, "--aggregator", address,
                     "--party", tmp_path / f"hospital_{h[-1]}.csv") for h in HOSPITALS[1:]]
    # Hospital A is a notebook: its rows in a DataFrame, the label a column of it.
    stats = privlogit.node(study, tmp_path / "hospital-a", frames["a"], label="label", aggregator=address)
    assert stats["bytes_sent"] > 0
    for p in [*nodes, aggregator, keyholder]:
        p.finish()

    import json
    distributed = json.loads(result.read_text())
    local = privlogit.study([tmp_path / f"hospital_{h}.csv" for h in "abc"], label="label", standardize=True,
                            optimizer="privlogit-accel", gradient_tol=1e-8, seed=7)
    assert distributed["status"] == "converged" and local["status"] == "converged"
    assert distributed["iterations"] == local["iterations"]
    assert distributed["names"] == local["names"]
    diff = np.max(np.abs(np.asarray(distributed["coefficients"]) - local["coef"]))
    # The same plan and mask seed: the same rounding, so the same model to the last bits.
    assert diff <= 1e-12, diff


def test_a_python_dealer_serves_cli_servers_as_a_dealer_thread_would(cli, tmp_path):
    """`privlogit.dealer` (a study file's optional third server) beside CLI servers and Nodes:
    the model equals the in-process study's with a dealer thread (`dealer_thread=True`) to
    1e-9. Not bit for bit: the Python dealer draws its correlations from the OS (a role takes
    no seed in this process), so the masked rounding differs in the last bits."""
    import json
    binary = ROOT / "target" / "release" / "privlogit"
    narrow_hospitals(tmp_path)
    study = study_file(cli, tmp_path, 'label = "label"\nstandardize = true\noptimizer = "privlogit-accel"\n'
                                      'gradient_tol = 1e-8\n')
    fingerprint = cli("identity", "new", "--name", "dealer", "--out", tmp_path).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(study, "a") as f:
        f.write(f'[dealer]\naddress = "127.0.0.1:{port}"\nfingerprint = "{fingerprint}"\n')
    failure = []

    def deal():
        try:
            privlogit.dealer(study, tmp_path / "dealer")
        except Exception as e:  # reported by the main thread
            failure.append(e)

    dealer = threading.Thread(target=deal)
    dealer.start()
    keyholder, aggregator, address, result = servers(binary, study, tmp_path)
    nodes = [Process(binary, "node", "--study", study, "--identity", tmp_path / h, "--aggregator", address,
                     "--party", tmp_path / f"hospital_{h[-1]}.csv") for h in HOSPITALS]
    for p in [*nodes, aggregator, keyholder]:
        p.finish()
    dealer.join(timeout=60)
    assert not dealer.is_alive() and not failure, failure
    assert "masked products from the dealer" in "".join(aggregator.seen)
    distributed = json.loads(result.read_text())
    local = privlogit.study([tmp_path / f"hospital_{h}.csv" for h in "abc"], label="label", standardize=True,
                            optimizer="privlogit-accel", gradient_tol=1e-8, seed=7, dealer_thread=True)
    assert distributed["iterations"] == local["iterations"]
    assert distributed["round_trips"] == local["round_trips"]
    diff = np.max(np.abs(np.asarray(distributed["coefficients"]) - local["coef"]))
    assert diff <= 1e-9, diff


def test_a_node_refuses_bad_rows_before_it_connects(tmp_path):
    # A DataFrame with a label 2 is a DataError naming the row, raised before any connection
    # (no panic, no half-joined study).
    frame = pd.read_csv(DEMO / "hospital_a.csv")
    frame.loc[3, "label"] = 2
    study = tmp_path / "study.toml"
    study.write_text('label = "label"\n')
    with pytest.raises(privlogit.DataError, match=r"row 4, label 2 is not 0 or 1"):
        privlogit.node(study, None, frame, label="label", insecure_plaintext=True, aggregator="127.0.0.1:9")
    with pytest.raises(privlogit.PrivlogitError, match="label"):
        privlogit.node(study, None, frame.drop(columns=["label"]), label="label", insecure_plaintext=True)
    with pytest.raises(privlogit.DataError, match="not numeric"):
        privlogit.node(study, None, frame.assign(mean_radius="x"), label="label", insecure_plaintext=True)


def test_ctrl_c_stops_a_python_node_and_every_party(cli, tmp_path):
    # A Python Node (its own process, as a notebook is) interrupted with SIGINT mid-study raises
    # KeyboardInterrupt, and its abort stops the key holder, the aggregator and the other Nodes,
    # each naming the cause, within the deadline (it used to run the study to its end).
    import signal
    import sys
    import time

    binary = ROOT / "target" / "release" / "privlogit"
    narrow_hospitals(tmp_path)
    # The paper's relative-change rule, never met: the study would run 10,000 iterations.
    study = study_file(cli, tmp_path, 'label = "label"\nstandardize = true\ntol = 1e-300\ngradient_tol = 0\n'
                                      'max_iter = 10000\n')
    keyholder = Process(binary, "keyholder", "--study", study, "--identity", tmp_path / "keyholder",
                        "--listen", "127.0.0.1:0", "--state", tmp_path / "state-k", "--deadline", "5")
    keyholder_address = re.search(r"listening on (\S+)", keyholder.wait_for("listening on")).group(1)
    aggregator = Process(binary, "aggregator", "--study", study, "--identity", tmp_path / "aggregator",
                         "--listen", "127.0.0.1:0", "--keyholder", keyholder_address, "--state",
                         tmp_path / "state-a", "--deadline", "5")
    address = re.search(r"listening on (\S+),", aggregator.wait_for("listening on")).group(1)
    nodes = [Process(binary, "node", "--study", study, "--identity", tmp_path / h, "--aggregator", address,
                     "--party", tmp_path / f"hospital_{h[-1]}.csv", "--deadline", "5")
             for h in HOSPITALS[1:]]
    script = (
        "import sys, pandas as pd, privlogit\n"
        "frame = pd.read_csv(sys.argv[2])\n"
        "try:\n"
        "    privlogit.node(sys.argv[1], sys.argv[3], frame, label='label', aggregator=sys.argv[4], deadline=5)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(130)\n"
    )
    notebook = subprocess.Popen([sys.executable, "-c", script, str(study), str(tmp_path / "hospital_a.csv"),
                                 str(tmp_path / "hospital-a"), address],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    aggregator.wait_for("iteration    5", seconds=120)
    notebook.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    out, err = notebook.communicate(timeout=30)
    assert notebook.returncode == 130 and "interrupted" in out, err
    for p in [aggregator, keyholder, *nodes]:
        p.proc.wait(timeout=30)
        while not p.lines.empty():
            p.seen.append(p.lines.get())
        log = "".join(p.seen)
        assert p.proc.returncode != 0, log
        assert "interrupted" in log or "hospital-a" in log, log
    # Every party stopped within the deadline (5 s) of the interrupt, with room for a busy machine.
    assert time.monotonic() - interrupted < 20
