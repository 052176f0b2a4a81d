"""Gaussian-process mathematics shared by the GP prior, the GP method and deep kernel learning.

``kernels``: the kernel components of the paper's Table 4 and their sums (``Kernel``).
``fit``: the type-II maximum-likelihood fit of a kernel family's hyper-parameters. ``linalg``:
the Cholesky factorisations, solves and log-determinants of GP covariances (the LAPACK Gaussian
log-likelihood and its gradient, also from traced JAX code for deep kernel learning; exact
conditioning; jittered square roots). ``exact``: exact prior draws and conditioning with known
per-point noise.

The component names are defined here, light to import: the covariate registry names a kernel per
dataset and is read at every workflow start.
"""

#: Kernel components a dataset's kernel is a weighted sum of (the paper's Table 4).
COMPONENTS = ("matern12", "matern32", "matern52", "rbf", "rq", "powexp", "periodic", "linear",
              "arccos0")
#: The stationary ones (functions of x − x′ only).
STATIONARY = ("matern12", "matern32", "matern52", "rbf", "rq", "powexp")
