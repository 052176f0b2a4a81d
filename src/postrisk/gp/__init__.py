"""Gaussian-process mathematics shared by the GP prior, the GP method and deep kernel learning.

``kernels``: the kernel components of the paper's Table 4, their sums and the type-II
maximum-likelihood fit (with the LAPACK Gaussian log-likelihood and its gradient, also used by
deep kernel learning). ``exact``: exact prior draws and conditioning with known per-point noise.

The component names are defined here, light to import: the covariate registry names a kernel per
dataset and is read at every workflow start.
"""

#: Kernel components a dataset's kernel is a weighted sum of (the paper's Table 4).
COMPONENTS = ("matern12", "matern32", "matern52", "rbf", "rq", "powexp", "periodic", "linear",
              "arccos0")
#: The stationary ones (functions of x − x′ only).
STATIONARY = ("matern12", "matern32", "matern52", "rbf", "rq", "powexp")
