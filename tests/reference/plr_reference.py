# Independent reference for cli/tests/suite/dp.rs: non-private l2 logistic regression on rows scaled to
# unit norm (Algorithm 1 step 7, RowScaling::Normalize), objective
#   J(w) = 1/n sum log(1 + exp(-y_i w.x_i)) + lam/2 ||w - c||^2,
# minimised by numpy Newton iterations until the gradient norm is 1e-14.
import numpy as np
d = np.genfromtxt('../shared/data/breast_cancer.csv', delimiter=',', names=True)
names = [n for n in d.dtype.names if n != 'label']
X = np.array([d[n] for n in names]).T
y = np.where(d['label'] == 1, 1.0, -1.0)
X = X / np.linalg.norm(X, axis=1, keepdims=True)
n, p = X.shape
def solve(lam, c):
    w = np.zeros(p)
    for _ in range(100):
        z = X @ w
        s = 1 / (1 + np.exp(y * z))
        g = -(X.T @ (y * s)) / n + lam * (w - c)
        if np.linalg.norm(g) < 1e-14: break
        h = (X.T * (s * (1 - s))) @ X / n + lam * np.eye(p)
        w = w - np.linalg.solve(h, g)
    return w
w0 = solve(0.01, np.zeros(p))
w1 = solve(0.01, np.full(p, 0.1))
np.set_printoptions(precision=17)
print("ridge", [float(v) for v in w0[:4]], float(np.linalg.norm(w0)))
print("centre", [float(v) for v in w1[:4]], float(np.linalg.norm(w1)))
