"""Posterior diagnostics of one task instance, per evaluation point. Pure functions on arrays.

Per evaluation point: the rank of f*(x) among the D draws (uniform when the draws follow the
posterior and f* the prior — Talts et al. 2018, "Validating Bayesian inference algorithms with
simulation-based calibration"), whether f* lies in the central 90% interval of the draws, the
relative Monte Carlo standard error of the posterior variance by batch means, and for MCMC
posteriors R̂ and ESS (ArviZ). Pooled over instances these make the paper's Table 3
(:mod:`postrisk.evaluation.posterior_checks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

N_RANK_BINS = 20
N_MCSE_BATCHES = 20


def rank_of_truth(draws: np.ndarray, f_true: np.ndarray) -> np.ndarray:
    """Number of draws below f*(x), per point: 0 … D."""
    return np.sum(np.asarray(draws) < np.asarray(f_true)[None, :], axis=0)


def covered_central(draws: np.ndarray, f_true: np.ndarray, level: float = 0.9) -> np.ndarray:
    """Whether f*(x) lies in the central ``level`` interval of the draws, per point."""
    lo, hi = np.quantile(np.asarray(draws, dtype=float), [(1 - level) / 2, (1 + level) / 2],
                         axis=0)
    f = np.asarray(f_true)
    return (f >= lo) & (f <= hi)


def batches(values: np.ndarray, n_batches: int = N_MCSE_BATCHES) -> np.ndarray:
    """Draws (in chain order) cut into ``n_batches`` equal consecutive batches, shape
    (n_batches, draws per batch, points); the last draws that do not fill a batch are left
    out."""
    values = np.asarray(values)
    usable = (values.shape[0] // n_batches) * n_batches
    if usable < 2 * n_batches:
        raise ValueError(f"need at least {2 * n_batches} draws for batch means")
    return values[:usable].reshape(n_batches, usable // n_batches, -1)


def batch_means_mcse_var(draws: np.ndarray, n_batches: int = N_MCSE_BATCHES) -> np.ndarray:
    """Relative MCSE of the posterior variance by batch means, per point.

    The draws (in chain order: whole chains or chain segments are consecutive) are cut into
    ``n_batches`` equal batches; MCSE = SD of the batch variances / √n_batches, divided by the
    variance of all draws. Within-chain dependence shows up as spread between batches.
    """
    draws = np.asarray(draws, dtype=float)
    batch_var = batches(draws, n_batches).var(axis=1, ddof=1)
    total = draws.var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, batch_var.std(axis=0, ddof=1) / np.sqrt(n_batches) / total,
                        0.0)


def batch_means_mcse_mean(draws: np.ndarray, n_batches: int = N_MCSE_BATCHES) -> np.ndarray:
    """Standard error of the posterior mean by batch means, per point: the SD of the batch
    means / √n_batches (the batches of :func:`batch_means_mcse_var`)."""
    means = batches(np.asarray(draws, dtype=float), n_batches).mean(axis=1)
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


def chain_draws(draws: np.ndarray, chains: int) -> np.ndarray:
    """Chain-major draws (C·S, P) as an array (C, S, P): chain c is draws c·S … (c+1)·S − 1.

    Floating-point draws keep their dtype (float32 stays float32); others become float64.
    """
    draws = np.asarray(draws)
    if not np.issubdtype(draws.dtype, np.floating):
        draws = draws.astype(float)
    if draws.ndim != 2:
        raise ValueError(f"expected (draws, points), got shape {draws.shape}")
    total, points = draws.shape
    if chains < 1 or total % chains:
        raise ValueError(f"{total} draws cannot be {chains} equal chains")
    return draws.reshape(chains, total // chains, points)


@contextmanager
def arviz_numpy_code() -> Iterator[None]:
    """ArviZ runs its NumPy code inside, even where Numba is installed (the methods install it
    for NGBoost's trees), and its switch is restored after. ArviZ switches to Numba-compiled
    helpers whenever it can import Numba; they round differently in the last bit (a task
    store's R̂ and ESS would depend on what else is installed) and compile anew in every
    posterior job."""
    import arviz as az

    found = az.Numba.numba_flag
    az.Numba.numba_flag = False
    try:
        yield
    finally:
        az.Numba.numba_flag = found


def rhat_and_ess(draws: np.ndarray, chains: int) -> tuple[np.ndarray, np.ndarray]:
    """R̂ and ESS of f(x) at every point, from chain-major draws (C·S, P), by ArviZ.

    R̂ is the rank-normalised, folded split-R̂ of Vehtari, Gelman, Simpson, Carpenter and
    Bürkner (2021), "Rank-normalization, folding, and localization: an improved R̂ for assessing
    convergence of MCMC" — the one the paper cites (``arviz.rhat(method="rank")``): each chain
    is split in halves, the pooled draws are rank-normalised (and, for the folded version,
    |θ − median| is), the classic R̂ of both is computed, and the larger is kept. ESS is the bulk
    ESS of the same paper (``arviz.ess(method="bulk")``). A point where every draw is equal gets
    R̂ = 1 and ESS = the number of draws.

    ArviZ works on the draws in their own dtype (:func:`chain_draws`): R̂ and ESS of a task
    store's float32 ``posterior_draws`` reshaped by chain equal these bit for bit, whereas
    R̂ of float64 draws differs from R̂ of the same draws rounded to float32. ArviZ runs its
    NumPy code here even where Numba is installed (:func:`arviz_numpy_code`).
    """
    import warnings

    import xarray as xr

    by_chain = chain_draws(draws, chains)
    if by_chain.shape[1] < 4:
        raise ValueError("split-R̂ needs at least 4 draws per chain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its next API
        import arviz as az

        ds = xr.Dataset({"f": (("chain", "draw", "point"), by_chain)})
        constant = np.ptp(by_chain.reshape(-1, by_chain.shape[2]), axis=0) == 0
        with arviz_numpy_code(), np.errstate(invalid="ignore", divide="ignore"):
            rhat = np.asarray(az.rhat(ds, method="rank")["f"].values, dtype=float)
            ess = np.asarray(az.ess(ds, method="bulk")["f"].values, dtype=float)
    total = float(by_chain.shape[0] * by_chain.shape[1])
    return np.where(constant, 1.0, rhat), np.where(constant, total, ess)


def instance_point_checks(draws: np.ndarray, f_true: np.ndarray, chains: int = 1,
                          rhat_draws: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per evaluation point: rank of f*, 90% coverage, relative MCSE of σ²_f; with several
    chains (chain-major draws) also R̂ and ESS (:func:`rhat_and_ess`).

    ``rhat_draws``: the draws R̂ and ESS are computed from (default: ``draws``), the same
    draws in the same order; task generation passes the float32 draws it stores, so that R̂ and
    ESS recomputed from a store equal the stored ones exactly. The other checks always use
    ``draws``.
    """
    out = {"rank_true": rank_of_truth(draws, f_true),
           "covered90": covered_central(draws, f_true, 0.9),
           "mcse_var": batch_means_mcse_var(draws)}
    if chains > 1:
        source = draws if rhat_draws is None else rhat_draws
        if np.shape(source) != np.shape(draws):
            raise ValueError(f"rhat_draws has shape {np.shape(source)}, draws {np.shape(draws)}")
        out["rhat"], out["ess"] = rhat_and_ess(source, chains)
    return out


def rank_bins(ranks: np.ndarray, n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Bin index of each rank 0 … n_draws in ``bins`` equal-width bins of the rank range."""
    return np.minimum((np.asarray(ranks) * bins) // (n_draws + 1), bins - 1)


def rank_histogram(ranks: np.ndarray, n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Shares of ranks (0 … n_draws) in ``bins`` equal-width bins of the rank range."""
    idx = rank_bins(ranks, n_draws, bins)
    return np.bincount(idx, minlength=bins) / idx.size


def rank_bin_probabilities(n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Each bin's probability under a calibrated sampler: the D + 1 ranks are equally likely,
    and they do not split evenly into ``bins`` bins unless ``bins`` divides D + 1."""
    return rank_histogram(np.arange(n_draws + 1), n_draws, bins)


def loglik_rank(draws_train: np.ndarray, f_true_train: np.ndarray, y_train: np.ndarray,
                noise_var_train: np.ndarray) -> int:
    """Rank of f*'s data log-likelihood among the draws' (a data-dependent SBC test quantity).

    ℓ(f) = −½ Σᵢ (yᵢ − f(xᵢ))² / σ²ᵢ at the training inputs. Under a correct posterior the rank
    is uniform; draws that ignore the data (the prior) rank f* at the top, which the rank of
    f(x) alone cannot see (Modrák et al. 2023).
    """
    def loglik(f):
        return -0.5 * np.sum((np.asarray(y_train) - f) ** 2 / noise_var_train, axis=-1)

    return int(np.sum(loglik(np.asarray(draws_train, dtype=float)) < loglik(f_true_train)))
