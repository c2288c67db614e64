"""The privacy accountant of `privlogit dp account`, from Python (the computation is the
Rust accountant's): composition, amplification by sampling, and RDP and zCDP of Gaussian
mechanisms. Every call returns the guarantee; none changes a ledger."""
from __future__ import annotations

import privlogit._native as _native

__all__ = ["basic_composition", "advanced_composition", "amplified", "gaussian_rdp", "gaussian_zcdp"]


def basic_composition(epsilon, delta, k):
    """`(k epsilon, k delta)`: `k` runs of an (epsilon, delta)-DP mechanism (dissertation
    Theorem 2.3.1)."""
    return _native.basic_composition(float(epsilon), float(delta), int(k))


def advanced_composition(epsilon, delta, k, slack):
    """`k` runs by advanced composition with slack delta' (Dwork, Rothblum and Vadhan 2010):
    `(sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta')`."""
    return _native.advanced_composition(float(epsilon), float(delta), int(k), float(slack))


def amplified(epsilon, delta, q):
    """The mechanism on a Poisson sample keeping each record with probability `q`:
    `(ln(1 + q (e^eps - 1)), q delta)`."""
    return _native.amplified(float(epsilon), float(delta), float(q))


def gaussian_rdp(sigma, q, steps, delta, orders=None):
    """`(epsilon, order)` for `steps` Gaussian mechanisms of noise multiplier `sigma`, each on
    a Poisson sample of ratio `q` (DP-SGD's accounting), composed in Renyi DP at integer
    `orders` (default 2..64 and powers of two to 1024) and converted at `delta`."""
    return _native.gaussian_rdp(float(sigma), float(q), int(steps), float(delta),
                                None if orders is None else [int(o) for o in orders])


def gaussian_zcdp(sigma, steps, delta):
    """epsilon at `delta` for `steps` Gaussian mechanisms of noise multiplier `sigma` by zCDP
    (rho = steps / (2 sigma^2)), converted at the best real order."""
    return _native.gaussian_zcdp(float(sigma), int(steps), float(delta))
