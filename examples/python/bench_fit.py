"""The Python package against the command line on a SimuX50-size plaintext fit (issue 18).

Reads the binary table written by

    privlogit simulate --rows 1000000 --features 50 --seed 50 --out simux50.plb

with privlogit's own loader (`privlogit.load`) and fits as `privlogit fit --party simux50.plb
--label y --standardize --optimizer privlogit-accel --quiet` does. Time both whole processes
side by side, for example with the farm-bench tool or `hyperfine`.
"""
import sys

import privlogit

X, y, _ = privlogit.load(sys.argv[1], "y")
out = privlogit.fit([(X, y)], optimizer="privlogit-accel", lam=1.0, standardize=True, tol=1e-6, max_iter=1000)
print(out["n_iter"], out["coef"][:3])
