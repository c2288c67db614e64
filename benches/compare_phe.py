#!/usr/bin/env python3
"""Side by side: privlogit's Paillier layer against python-paillier (phe), same machine, one
thread, 2048-bit keys, medians.

    python3 -m pip install phe gmpy2          # gmpy2 is phe's fast path; without it phe is slower
    cargo build --release
    python3 benches/compare_phe.py [--binary target/release/privlogit] [--matrix 200] [--runs 7]

privlogit's figures come from `privlogit bench paillier --json`; phe's are timed here with
time.perf_counter over batches (median of --runs batches, each at least 50 ms). The two are run
alternately (--rounds times) and each figure is the median over rounds. Ratios are phe time /
privlogit time: above 1 means privlogit is faster.
"""
import argparse
import json
import random
import statistics
import subprocess
import sys
import time

from phe import paillier
import phe.util


def median_seconds(f, runs):
    f()
    start = time.perf_counter()
    f()
    once = max(time.perf_counter() - start, 1e-7)
    per_batch = max(1, int(0.05 / once))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(per_batch):
            f()
        samples.append((time.perf_counter() - start) / per_batch)
    return statistics.median(samples)


def time_phe(bits, runs):
    rng = random.Random(1)
    public, private = paillier.generate_paillier_keypair(n_length=bits)
    m = rng.getrandbits(64)
    c = public.encrypt(m)
    negative = -(rng.getrandbits(63))
    positive = rng.getrandbits(63)
    return {
        "encrypt": median_seconds(lambda: public.encrypt(m), runs),
        "decrypt": median_seconds(lambda: private.decrypt(c), runs),
        "mul_scalar_negative_63bit": median_seconds(lambda: c * negative, runs),
        "mul_scalar_positive_63bit": median_seconds(lambda: c * positive, runs),
        "add": median_seconds(lambda: c + c, runs),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/privlogit")
    parser.add_argument("--bits", type=int, default=2048)
    parser.add_argument("--matrix", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternate privlogit and phe this many times; medians over rounds")
    args = parser.parse_args()

    def run_ours(matrix):
        return json.loads(subprocess.run(
            [args.binary, "bench", "paillier", "--bits", str(args.bits), "--matrix", str(matrix),
             "--runs", str(args.runs), "--threads", "1", "--json"],
            check=True, stdout=subprocess.PIPE).stdout)

    # A B A B ...: both sides see the same machine conditions; the matrix product runs once.
    ours_rounds, theirs_rounds = [], []
    for r in range(args.rounds):
        ours_rounds.append(run_ours(args.matrix if r == 0 else 0))
        theirs_rounds.append(time_phe(args.bits, args.runs))
    ours = ours_rounds[0]
    figures = {f["name"]: statistics.median(
        [next(g["seconds"] for g in o["figures"] if g["name"] == f["name"]) for o in ours_rounds])
        for f in ours["figures"]}
    theirs = {k: statistics.median([t[k] for t in theirs_rounds]) for k in theirs_rounds[0]}

    rows = [
        # (what, privlogit figure, phe figure, target ratio phe/privlogit)
        ("encrypt (DJN noise)", "encrypt_djn", "encrypt", ">= 10"),
        ("encrypt (standard r^n)", "encrypt_standard", "encrypt", ""),
        ("encrypt (key holder, CRT)", "encrypt_crt_keyholder", "encrypt", ""),
        ("encrypt (pooled noise, online)", "encrypt_pooled_online", "encrypt", ""),
        ("decrypt", "decrypt", "decrypt", ">= 1/1.5"),
        ("mul by signed 63-bit scalar (negative)", "mul_scalar_negative_63bit", "mul_scalar_negative_63bit", ">= 1"),
        ("mul by 63-bit scalar (positive)", "mul_scalar_positive_63bit", "mul_scalar_positive_63bit", ">= 1"),
        ("add", "add", "add", ""),
    ]
    print(f"{args.bits}-bit keys, one thread, {ours['machine']}; phe {getattr(__import__('phe'), '__version__', '')}"
          f" with gmpy2: {phe.util.HAVE_GMP if hasattr(phe.util, 'HAVE_GMP') else 'unknown'}")
    print(f"{'operation':<40} {'privlogit':>12} {'phe':>12} {'phe/privlogit':>14}  target")
    for what, ours_key, phe_key, target in rows:
        a, b = figures[ours_key], theirs[phe_key]
        print(f"{what:<40} {a * 1e3:>9.3f} ms {b * 1e3:>9.3f} ms {b / a:>13.2f}x  {target}")
    if ours.get("matvec"):
        mv = ours["matvec"]
        print(f"Enc(M) v, {mv['size']} x {mv['size']}: packed + multi-exponentiation "
              f"{mv['packed_multiexp_seconds']:.3f} s, one scalar multiplication per entry "
              f"{mv['entrywise_seconds']:.2f} s, speed-up {mv['speedup']:.1f}x (target >= 10)")


if __name__ == "__main__":
    sys.exit(main())
