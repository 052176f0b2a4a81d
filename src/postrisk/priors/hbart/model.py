"""Heteroscedastic BART's prior model: bartz's own tree prior, drawn by us (docs/design.md,
"Priors").

f = Σ_{t=1}^{m} g_t(x), m = ``num_trees`` trees drawn independently from bartz's tree
prior: a node at depth k (root k = 0) is non-terminal with probability ``base·(1+k)^-power``
when it still has an available decision rule, else it is a leaf; trees have at most
``max_depth`` levels in bartz's convention (node depths 0 … max_depth−1, the deepest always
leaves). A decision rule picks its variable uniformly among the variables with an available
cutpoint in the node's range (restricted by the ancestors' rules), then its cutpoint uniformly
among the available ones; leaves are N(0, a²/m). Cutpoints are the explicit grid
t_j = j/(K+1), j = 1 … K (K = ``n_cutpoints``, 255: 256 bins), binned exactly as bartz's
:class:`bartz.prepcovars.GivenSplitsBinner` does (x ↦ #{t_j < x} after a float32 cast: a value
equal to a cutpoint goes left; rows outside [0, 1] fall in the end bins). Offset 0; nothing
depends on the data but the scale constant ``a`` (the rule of every prior,
:func:`postrisk.priors.base.scale_constant`; here :func:`hbart_scale_constant`).

:func:`sample_forests` is our own numpy sampler of that prior (vectorised over trees, heap
layout as bartz's: node i has children 2i, 2i+1), checked against ``bartz.debug.sample_prior``
and against a bartz run with every target missing in ``tests/priors/test_hbart.py``. The
posterior is :mod:`postrisk.priors.hbart.sampler`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.priors.base import scale_constant


@dataclass(frozen=True)
class TreePrior:
    """bartz's tree prior: ``num_trees`` trees, depth rule ``base·(1+k)^-power`` for node
    depths k = 0 … max_depth−2 (depth max_depth−1 nodes are leaves), ``n_cutpoints`` cutpoints
    j/(n_cutpoints+1) per variable."""

    num_trees: int = 200
    max_depth: int = 6
    base: float = 0.95
    power: float = 2.0
    n_cutpoints: int = 255

    @classmethod
    def from_params(cls, params: dict) -> TreePrior:
        return cls(num_trees=int(params["num_trees"]), max_depth=int(params["max_depth"]),
                   base=float(params["base"]), power=float(params["power"]),
                   n_cutpoints=int(params["n_cutpoints"]))

    def p_nonterminal(self) -> np.ndarray:
        """P(node at depth k splits | it can), k = 0 … max_depth−2 (bartz's ``p_nonterminal``,
        as ``bartz.mcmcstep.make_p_nonterminal(max_depth, base, power)``)."""
        return self.base / (1.0 + np.arange(self.max_depth - 1)) ** self.power

    def cutpoints(self) -> np.ndarray:
        """t_j = j/(K+1), j = 1 … K, as float32 (exact: K+1 is a power of two by default)."""
        k = self.n_cutpoints
        return (np.arange(1, k + 1, dtype=np.float64) / (k + 1)).astype(np.float32)

    @property
    def half_size(self) -> int:
        """Heap slots of decision nodes (index 0 unused): 2^(max_depth−1)."""
        return 2 ** (self.max_depth - 1)


def bin_covariates(x: np.ndarray, prior: TreePrior) -> np.ndarray:
    """(n, d) bin indices 0 … K: #{t_j < x} with x cast to float32, as bartz's
    ``GivenSplitsBinner.bin`` (``searchsorted(..., side='left')``). Out-of-range rows fall in
    the end bins (clamped)."""
    x = as_matrix("x", x, finite=True)
    cuts = prior.cutpoints()
    dtype = np.uint8 if prior.n_cutpoints <= 255 else np.uint16
    return np.searchsorted(cuts, x.astype(np.float32).ravel(), side="left").reshape(
        x.shape).astype(dtype)


@dataclass
class Forests:
    """Trees in bartz's heap layout, ``(F, num_trees, ·)``: ``var``/``split`` over decision
    slots 0 … half−1 (split 0 = leaf), ``leaf`` over all slots 0 … 2·half−1."""

    var: np.ndarray
    split: np.ndarray
    leaf: np.ndarray

    def depth(self) -> np.ndarray:
        """Depth of each tree (0 for a stump), (F, num_trees)."""
        half = self.split.shape[-1]
        node_depth = np.floor(np.log2(np.maximum(np.arange(half), 1))).astype(int)
        internal = self.split != 0
        return np.where(internal.any(-1), (internal * (node_depth + 1)).max(-1), 0)

    def n_leaves(self) -> np.ndarray:
        """Number of leaves of each tree, (F, num_trees)."""
        return (self.split != 0).sum(-1) + 1


def sample_forests(prior: TreePrior, n_forests: int, d: int, leaf_sd: float,
                   rng: np.random.Generator) -> Forests:
    """``n_forests`` independent forests of ``prior.num_trees`` trees each (see module doc).

    Vectorised over all trees, visiting heap slots in order (a parent before its children):
    a slot is a candidate when its parent split; its range per variable is the parent's with
    the parent's variable cut at the parent's cutpoint (left child: cutpoints < split, right
    child: > split); it splits with probability p_nonterminal[depth] if some variable has an
    available cutpoint, on a variable uniform among those, at a cutpoint uniform in range.
    """
    m = n_forests * prior.num_trees
    half, k_cut = prior.half_size, prior.n_cutpoints
    p_nt = prior.p_nonterminal()
    # available cutpoints of variable v at a slot: lower[v] + 1 … upper[v] (bartz's convention)
    lower = np.zeros((half, m, d), dtype=np.int32)
    upper = np.full((half, m, d), k_cut, dtype=np.int32)
    var = np.zeros((m, half), dtype=np.int32)
    split = np.zeros((m, half), dtype=np.int32)
    rows = np.arange(m)
    for node in range(1, half):
        depth = int(math.log2(node))
        if node == 1:
            candidate = np.ones(m, dtype=bool)
        else:
            parent = node // 2
            candidate = split[:, parent] != 0
            lo, up = lower[parent].copy(), upper[parent].copy()
            pv, ps = var[:, parent], split[:, parent]
            if node % 2 == 0:  # left child: x < split
                up[rows, pv] = np.where(candidate, ps - 1, up[rows, pv])
            else:
                lo[rows, pv] = np.where(candidate, ps, lo[rows, pv])
            lower[node], upper[node] = lo, up
        available = lower[node] < upper[node]
        allowed = available.any(axis=1)
        grow = candidate & allowed & (rng.random(m) < p_nt[depth])
        u = rng.random((m, d))
        v = np.argmax(np.where(available, u, -1.0), axis=1)
        lo_v = lower[node][rows, v]
        width = np.maximum(upper[node][rows, v] - lo_v, 1)
        s = lo_v + 1 + np.minimum((rng.random(m) * width).astype(np.int32), width - 1)
        var[:, node] = np.where(grow, v, 0)
        split[:, node] = np.where(grow, s, 0)
    leaf = leaf_sd * rng.standard_normal((m, 2 * half))
    shape = (n_forests, prior.num_trees)
    return Forests(var=var.reshape(*shape, half), split=split.reshape(*shape, half),
                   leaf=leaf.reshape(*shape, 2 * half))


def evaluate_forests(forests: Forests, bins: np.ndarray) -> np.ndarray:
    """Sum of trees of each forest at binned rows ``bins`` (n, d): (F, n) float64.

    Row goes left at a decision node iff bin < split (bartz: ``X < cutpoint``)."""
    n_forests, n_trees, half = forests.split.shape
    n = bins.shape[0]
    bins_t = np.ascontiguousarray(np.asarray(bins, dtype=np.int32).T)  # (d, n)
    cols = np.arange(n)[None, :]
    out = np.zeros((n_forests, n))
    var = forests.var.reshape(-1, half)
    split = forests.split.reshape(-1, half)
    leaf = forests.leaf.reshape(-1, 2 * half)
    chunk = max(1, 2_000_000 // max(n, 1))  # trees per chunk, bounding (trees, n) arrays
    n_levels = int(math.log2(half))
    for start in range(0, n_forests * n_trees, chunk):
        stop = min(start + chunk, n_forests * n_trees)
        t = np.arange(start, stop)[:, None]
        idx = np.ones((stop - start, n), dtype=np.int32)
        for _ in range(n_levels):
            s = split[t, idx]
            right = bins_t[var[t, idx], cols] >= s
            idx = np.where(s != 0, 2 * idx + right, idx)
        values = leaf[t, idx]
        forest_of = np.arange(start, stop) // n_trees
        _add_rows(out, forest_of, values)
    return out


def _add_rows(out: np.ndarray, group: np.ndarray, values: np.ndarray) -> None:
    """out[g] += Σ values[group == g] for sorted ``group``."""
    bounds = np.flatnonzero(np.diff(group)) + 1
    starts = np.concatenate([[0], bounds])
    out[group[starts]] += np.add.reduceat(values, starts, axis=0)


def sample_prior_draws(prior: TreePrior, a: float, x: np.ndarray, rng: np.random.Generator,
                       size: int = 1) -> np.ndarray:
    """``size`` independent draws of f (leaves N(0, a²/num_trees)) at the rows ``x``:
    (size, n) float64. Evaluated on the unique binned rows and broadcast back."""
    bins = bin_covariates(x, prior)
    if bins.shape[0] == 0:
        return np.zeros((size, 0))
    ub, inv = np.unique(bins, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    leaf_sd = float(a) / math.sqrt(prior.num_trees)
    out = np.empty((size, ub.shape[0]))
    per = max(1, 20_000 // prior.num_trees)  # forests per batch
    for start in range(0, size, per):
        stop = min(size, start + per)
        forests = sample_forests(prior, stop - start, bins.shape[1], leaf_sd, rng)
        out[start:stop] = evaluate_forests(forests, ub)
    return np.ascontiguousarray(out[:, inv])


def hbart_scale_constant(prior: TreePrior, x_eval: np.ndarray, rng: np.random.Generator,
                         n_draws: int = 100) -> float:
    """The scale constant (:func:`~postrisk.priors.base.scale_constant`) of ``n_draws``
    unit-scale draws (leaves N(0, 1/num_trees)) at the evaluation rows ``x_eval``."""
    return scale_constant(sample_prior_draws(prior, 1.0, x_eval, rng, size=n_draws))
