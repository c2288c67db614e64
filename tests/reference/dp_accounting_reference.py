# Independent reference for cli/tests/suite/dp_accounting.rs: Google's dp-accounting (pip install
# dp-accounting==0.6.0), RDP of Poisson-subsampled Gaussian mechanisms composed over steps, at
# the integer orders privlogit uses, and the (epsilon, delta) conversion; and, for plain
# Gaussians, zCDP's conversion approximated by RDP on a dense grid of real orders.
#   python3 tests/reference/dp_accounting_reference.py > tests/reference/dp_accounting_reference.json
# Exits 3 when dp_accounting is not installed (the Rust test then uses the stored file only).
import json
import sys

try:
    import dp_accounting
    from dp_accounting import rdp
except ImportError as e:
    print(f"dp_accounting is not installed ({e})", file=sys.stderr)
    sys.exit(3)
import numpy as np

ORDERS = list(range(2, 65)) + [128, 256, 512, 1024]
SUBSAMPLED = [  # (q, noise multiplier sigma, steps, delta)
    (0.01, 1.1, 1000, 1e-5),
    (0.01, 0.7, 100, 1e-5),
    (0.001, 2.0, 10000, 1e-6),
    (0.05, 1.0, 500, 1e-5),
    (0.1, 4.0, 200, 1e-6),
    (0.2, 1.5, 50, 1e-5),
    (0.5, 3.0, 10, 1e-5),
    (0.004, 1.3, 60000, 1e-5),
    (0.02, 0.8, 2000, 2.0**-30),
    (0.3, 10.0, 1, 1e-9),
    (1.0, 5.0, 100, 1e-5),
    (1.0, 1.0, 1, 1e-6),
]
ZCDP = [(5.0, 100, 1e-5), (1.0, 1, 1e-6), (20.0, 1000, 2.0**-30)]  # (sigma, steps, delta)
# The sparse Gaussian mechanism of `privlogit dl` (src/dl/sparse.rs): a participant's T visits
# are T Poisson-subsampled Gaussians whose noise multiplier is z scaled by the lattice rounding,
# z_eff = 2^20 / (2^20 / z + sqrt(n)), n the coordinates uploaded a visit, composed with the
# participant's noisy row count, released once: a Gaussian of sensitivity 1 and standard
# deviation COUNT_NOISE = 20 rows.
# (q, z, n uploaded coordinates, visits T, delta): settings like the experiment's (40,312
# parameters, 10 % uploaded) at epsilon about 1, 3 and 8.
SPARSE = [(0.1, 4.2811, 4031, 100, 1e-5), (0.1, 2.7741, 4031, 300, 1e-5),
          (0.1, 1.7638, 4031, 600, 1e-5), (0.2, 1.0, 100, 50, 1e-6)]

out = {"dp_accounting": getattr(dp_accounting, "__version__", "0.6.0"), "orders": ORDERS,
       "subsampled_gaussian": [], "zcdp": [], "sparse_gaussian": []}
for q, sigma, steps, delta in SUBSAMPLED:
    acc = rdp.RdpAccountant(orders=ORDERS)
    event = dp_accounting.GaussianDpEvent(sigma)
    if q < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    acc.compose(event, steps)
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    out["subsampled_gaussian"].append({
        "q": q, "sigma": sigma, "steps": steps, "delta": delta,
        "rdp": [float(v) for v in acc._rdp], "epsilon": float(eps), "order": int(order)})
grid = list(np.linspace(1.02, 2000.0, 400000))
for sigma, steps, delta in ZCDP:
    acc = rdp.RdpAccountant(orders=grid)
    acc.compose(dp_accounting.GaussianDpEvent(sigma), steps)
    out["zcdp"].append({"sigma": sigma, "steps": steps, "delta": delta,
                        "epsilon": float(acc.get_epsilon(delta))})
for q, z, n, steps, delta in SPARSE:
    z_eff = 2.0**20 / (2.0**20 / z + n**0.5)
    acc = rdp.RdpAccountant(orders=ORDERS)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z_eff)), steps)
    acc.compose(dp_accounting.GaussianDpEvent(20.0))
    out["sparse_gaussian"].append({"q": q, "z": z, "n": n, "steps": steps, "delta": delta,
                                   "epsilon": float(acc.get_epsilon(delta))})
# One setting per line.
print("{")
print(f' "dp_accounting": {json.dumps(out["dp_accounting"])},')
print(f' "orders": {json.dumps(out["orders"])},')
keys = ("subsampled_gaussian", "zcdp", "sparse_gaussian")
for key in keys:
    rows = ",\n  ".join(json.dumps(r) for r in out[key])
    print(f' "{key}": [\n  {rows}\n ]' + ("," if key != keys[-1] else ""))
print("}")
