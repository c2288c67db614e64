"""Round trip with python-paillier (issue 18): a ciphertext made by either library decrypts in
the other, and arithmetic mixes them."""
import pytest

from privlogit import paillier

phe = pytest.importorskip("phe")


@pytest.fixture(scope="module")
def keys():
    ours = paillier.generate_keypair(2048)
    public, private = paillier.to_phe_private_key(ours)
    return ours, public, private


@pytest.mark.parametrize("x", [-1.5, 0.1, -2.25, 12345.0625])
def test_ours_decrypt_in_phe_and_theirs_in_ours(keys, x):
    ours, public, private = keys
    mine = paillier.encrypt(ours, x)
    assert mine.decrypt() == x
    assert private.decrypt(paillier.to_phe(mine, public)) == x
    theirs = public.encrypt(x)
    assert paillier.from_phe(ours, theirs).decrypt() == x


def test_mixed_arithmetic(keys):
    ours, public, private = keys
    a = paillier.from_phe(ours, public.encrypt(-1.5))
    b = paillier.encrypt(ours, 0.1)
    combined = a * -2.25 + b
    assert combined.decrypt() == 3.475
    assert private.decrypt(paillier.to_phe(combined, public)) == 3.475


def test_arrays_round_trip_and_add_under_encryption(keys):
    import numpy as np

    ours = keys[0]
    values = np.array([[0.5, -1.25], [3.0, 1e-3]])
    encrypted = paillier.encrypt_array(ours, values)
    assert encrypted.shape == (2, 2)
    assert np.array_equal(paillier.decrypt_array(encrypted), values)
    sums = encrypted[0] + encrypted[1]  # element-wise homomorphic addition
    assert np.allclose(paillier.decrypt_array(sums), values[0] + values[1], atol=1e-12)
