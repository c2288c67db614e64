"""Splits the demo's breast-cancer rows by columns into three organisations' files.

Each file has an `id` column (P0001 ... P0569, the row's place in the demo files), holds
about 90% of the people (a seeded random 10% left out of each, independently) in its own
seeded random order; `outcomes.csv` has the label and the first 10 features, `imaging.csv`
the next 10, `registry.csv` the last 10. Run from the repository's root:
python3 data/vertical/make.py
"""
import csv
import random

rows = []
header = None
for name in ["hospital_a", "hospital_b", "hospital_c"]:
    with open(f"data/demo/{name}.csv") as f:
        reader = csv.reader(f)
        h = next(reader)
        header = header or h
        rows.extend(reader)
features = [c for c in header if c != "label"]
label = header.index("label")
ids = [f"P{i + 1:04d}" for i in range(len(rows))]
rng = random.Random(20261127)
parts = [
    ("outcomes", ["label"] + features[:10]),
    ("imaging", features[10:20]),
    ("registry", features[20:]),
]
for name, columns in parts:
    keep = [i for i in range(len(rows)) if rng.random() >= 0.10]
    rng.shuffle(keep)
    index = [header.index(c) for c in columns]
    with open(f"data/vertical/{name}.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id"] + columns)
        for i in keep:
            w.writerow([ids[i]] + [rows[i][j] for j in index])
