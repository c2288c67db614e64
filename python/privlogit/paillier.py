"""Paillier encryption in Rust, interoperable with python-paillier (`phe`).

Numbers use phe's representation (ciphertext integer, base-16 exponent), so a ciphertext made
here decrypts in phe under the exported key and one made by phe under this key's public modulus
decrypts here. Each number carries a public bound on its magnitude, which the Rust arithmetic
checks (phe tracks none): a result past it is refused rather than wrapped.
"""
from __future__ import annotations

from dataclasses import dataclass

from ._native import Keypair

__all__ = [
    "Keypair", "EncryptedNumber", "generate_keypair", "encrypt", "decrypt", "encrypt_array",
    "decrypt_array", "to_phe_private_key", "to_phe", "from_phe",
]

DEFAULT_BOUND = 1e12


@dataclass(frozen=True)
class EncryptedNumber:
    """An encrypted float under `keypair`: phe's (ciphertext, exponent), and its bound."""

    keypair: Keypair
    ciphertext: int
    exponent: int
    bound: float = DEFAULT_BOUND

    def _phe(self):
        return (str(self.ciphertext), self.exponent)

    def __add__(self, other):
        c, e = self.keypair.add(self._phe(), other._phe(), max(self.bound, other.bound))
        return EncryptedNumber(self.keypair, int(c), e, self.bound + other.bound)

    def __mul__(self, k):
        c, e = self.keypair.mul(self._phe(), float(k), self.bound)
        return EncryptedNumber(self.keypair, int(c), e, self.bound * abs(float(k)))

    __rmul__ = __mul__

    def decrypt(self):
        return self.keypair.decrypt(self._phe(), self.bound)


def generate_keypair(bits=2048):
    """A fresh key pair (2048, 3072 or 4096 bits) from the OS CSPRNG."""
    return Keypair(bits)


def encrypt(keypair, x, bound=DEFAULT_BOUND):
    """`x` encrypted under `keypair`, declared at most `bound` in magnitude."""
    c, e = keypair.encrypt(float(x), float(bound))
    return EncryptedNumber(keypair, int(c), e, float(bound))


def decrypt(number):
    """The float `number` encrypts."""
    return number.decrypt()


def encrypt_array(keypair, values, bound=DEFAULT_BOUND):
    """Each element of a numpy array encrypted: an object array of `EncryptedNumber` of the same
    shape."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    out = np.empty(values.shape, dtype=object)
    for index, x in np.ndenumerate(values):
        out[index] = encrypt(keypair, x, bound)
    return out


def decrypt_array(numbers):
    """An array of `EncryptedNumber` (any shape) decrypted to a float64 array."""
    import numpy as np

    numbers = np.asarray(numbers, dtype=object)
    out = np.empty(numbers.shape, dtype=np.float64)
    for index, number in np.ndenumerate(numbers):
        out[index] = number.decrypt()
    return out


def to_phe_private_key(keypair):
    """The key as python-paillier objects `(PaillierPublicKey, PaillierPrivateKey)` (needs phe)."""
    import phe

    public = phe.PaillierPublicKey(int(keypair.n))
    p, q = keypair.export_primes()
    return public, phe.PaillierPrivateKey(public, int(p), int(q))


def to_phe(number, phe_public_key):
    """`number` as a phe `EncryptedNumber` under the phe form of its key."""
    import phe

    return phe.EncryptedNumber(phe_public_key, number.ciphertext, number.exponent)


def from_phe(keypair, phe_number, bound=DEFAULT_BOUND):
    """A phe `EncryptedNumber` made under this key's public modulus, as ours."""
    if int(phe_number.public_key.n) != int(keypair.n):
        raise ValueError("the phe number is under another public key")
    return EncryptedNumber(keypair, int(phe_number.ciphertext(be_secure=False)), phe_number.exponent, float(bound))
