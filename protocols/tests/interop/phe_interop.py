#!/usr/bin/env python3
"""The python-paillier (phe) side of privlogit's interoperability test.

Reads one JSON object on stdin: a key exported by privlogit ({"n", "p", "q"} as decimal
strings) and ciphertexts privlogit made ({"name": [ciphertext, exponent]}). Decrypts those with
phe, encrypts the same numbers with phe, computes E(-1.5) * (-2.25) + E(0.1) with phe, and
prints one JSON object with the results. Exit status 3 when phe is not installed.

Run by protocols/tests/suite/phe_interop.rs; by hand: python3 phe_interop.py < input.json
"""
import json
import sys

try:
    from phe import paillier
except ImportError:
    print("phe (python-paillier) is not installed: pip install phe", file=sys.stderr)
    sys.exit(3)


def main():
    request = json.load(sys.stdin)
    n, p, q = (int(request[k]) for k in ("n", "p", "q"))
    public = paillier.PaillierPublicKey(n)
    private = paillier.PaillierPrivateKey(public, p, q)

    decrypted = {}
    for name, (ciphertext, exponent) in request["ciphertexts"].items():
        number = paillier.EncryptedNumber(public, int(ciphertext), int(exponent))
        decrypted[name] = private.decrypt(number)

    encrypted = {}
    phe_numbers = {}
    for name, value in (("minus_1_5", -1.5), ("point_1", 0.1), ("minus_2_25", -2.25)):
        number = public.encrypt(value)
        phe_numbers[name] = number
        encrypted[name] = [str(number.ciphertext()), number.exponent]
    combined = phe_numbers["minus_1_5"] * -2.25 + phe_numbers["point_1"]

    json.dump({
        "decrypted": decrypted,
        "encrypted": encrypted,
        "combined": [str(combined.ciphertext()), combined.exponent],
        "combined_decrypted_by_phe": private.decrypt(combined),
    }, sys.stdout)


if __name__ == "__main__":
    main()
