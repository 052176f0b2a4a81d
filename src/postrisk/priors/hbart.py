"""Heteroscedastic BART: bartz's own tree prior, drawn by us, conditioned by bartz
(docs/design.md, "Priors" and "Task instances").

Prior. f = Σ_{t=1}^{m} g_t(x), m = ``num_trees`` trees drawn independently from bartz's tree
prior: a node at depth k (root k = 0) is non-terminal with probability ``base·(1+k)^-power``
when it still has an available decision rule, else it is a leaf; trees have at most
``max_depth`` levels in bartz's convention (node depths 0 … max_depth−1, the deepest always
leaves). A decision rule picks its variable uniformly among the variables with an available
cutpoint in the node's range (restricted by the ancestors' rules), then its cutpoint uniformly
among the available ones; leaves are N(0, a²/m). Cutpoints are the explicit grid
t_j = j/(K+1), j = 1 … K (K = ``n_cutpoints``, 255: 256 bins), binned exactly as bartz's
:class:`bartz.prepcovars.GivenSplitsBinner` does (x ↦ #{t_j < x} after a float32 cast: a value
equal to a cutpoint goes left; rows outside [0, 1] fall in the end bins). Offset 0; nothing
depends on the data but the scale constant ``a`` (the GP's rule, :func:`scale_constant`).

:func:`sample_forests` is our own numpy sampler of that prior (vectorised over trees, heap
layout as bartz's: node i has children 2i, 2i+1), checked against ``bartz.debug.sample_prior``
and against a bartz run with every target missing in ``tests/test_hbart.py``.

Posterior. bartz 0.13's low-level MCMC (``mcmcstep.init`` / ``mcmcloop.run_mcmc``) with
per-point error scales σᵢ = sqrt(noise_var_trainᵢ) and the global error precision held fixed:
bartz requires a (ν, rate) prior for continuous outcomes, so :func:`fixed_error_step` hides it
from ``bartz.mcmcstep.step`` (which skips the precision update when ν is None — the documented
way to hold a precision fixed) and restores it afterwards. The precision is therefore exactly
the value we set: 1/T during a tempered stage (noise SD σᵢ·√T), 1 afterwards. The evaluation
rows ride along as rows marked missing, so their draws come from the same run. Tempered
warm-up: stages k = 0 … S−1 at T_k = t0^(1−k/S), equal lengths over the first ``share`` of the
warm-up, then T = 1 for the rest of the warm-up and the sampling. Each stage is one
``run_mcmc`` call continuing the previous state with the same key; bartz seeds iteration i by
``fold_in(key, i)``, so splitting a run into stages changes nothing but the temperature (with
t0 = 1 the draws equal a single run's bit for bit). Chains are vectorised (``num_chains``) and
sharded over the JAX CPU devices (``mesh``). JAX x64 must be off (bartz fails with it).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.core.progress import progress_steps
from postrisk.priors.base import PosteriorResult, training_targets

logger = logging.getLogger(__name__)

FAMILY = "hbart"


# --------------------------------------------------------------------------------------------
# The tree prior, our own sampler (numpy)
# --------------------------------------------------------------------------------------------

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


def scale_constant(prior: TreePrior, x_eval: np.ndarray, rng: np.random.Generator,
                   n_draws: int = 100) -> float:
    """The scale constant: ``n_draws`` unit-scale draws (leaves N(0, 1/num_trees)), SD of each
    over the evaluation rows (ddof 0), ``a = 1 / median SD``."""
    draws = sample_prior_draws(prior, 1.0, x_eval, rng, size=n_draws)
    med = float(np.median(np.std(draws, axis=1)))
    if not med > 0:
        raise ValueError("HBART prior draws have zero spread over the evaluation points")
    return 1.0 / med


# --------------------------------------------------------------------------------------------
# The posterior (bartz)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Stage:
    """One ``run_mcmc`` call: ``iterations`` MCMC steps at temperature ``temperature``, the
    first ``burn`` of them not saved (the rest, if any, saved every ``thin``-th)."""

    kind: str  # "tempered" | "sampling" (the rest of the warm-up at T = 1, then the draws)
    temperature: float
    iterations: int
    burn: int


def tempering_schedule(warmup: int, draws_per_chain: int, thin: int, t0: float, stages: int,
                       share: float) -> list[Stage]:
    """Stages T_k = t0^(1−k/stages), k = 0 … stages−1, of equal length ⌊share·warmup/stages⌋
    (dropped if 0), then one call at T = 1: the rest of the warm-up, then draws_per_chain·thin
    steps saving every ``thin``-th. Equal stage lengths let bartz's compiled loop be reused
    (its traces are shaped by the call's length)."""
    per = int(round(share * warmup)) // stages if stages > 0 else 0
    out = [Stage("tempered", float(t0 ** (1.0 - k / stages)), per, per)
           for k in range(stages)] if per > 0 else []
    rest = warmup - sum(s.iterations for s in out)
    out.append(Stage("sampling", 1.0, rest + draws_per_chain * thin, rest))
    return out


def check_x64_off() -> None:
    """bartz needs JAX x64 off; raise a clear error otherwise."""
    import jax

    if jax.config.jax_enable_x64:
        raise RuntimeError("HBART posterior needs JAX x64 OFF (bartz fails with "
                           "jax_enable_x64); run it in a process without x64 (one family per "
                           "process, see postrisk.core.jax_env)")


def fixed_error_step(key, state):
    """``bartz.mcmcstep.step`` with the global error precision held at its current value.

    The step skips the precision update when the Wishart prior has ``nu = None``; the prior
    (a placeholder required by ``init`` for continuous outcomes) is hidden during the step and
    restored after it. Module-level, so ``run_mcmc`` compiles it once per shape.
    """
    from bartz.mcmcstep import step

    prior = state.error_cov_inv
    fixed = replace(state, error_cov_inv=replace(prior, nu=None, rate=None))
    out = step(key, fixed)
    return replace(out, error_cov_inv=replace(prior, value=out.error_cov_inv.value))


def set_error_precision(state, precision: float):
    """The state with every chain's global error precision set to ``precision`` (float32,
    keeping the array's sharding)."""
    import jax.numpy as jnp

    value = state.error_cov_inv.value
    new = value * jnp.float32(0.0) + jnp.float32(precision)
    return replace(state, error_cov_inv=replace(state.error_cov_inv, value=new))


def chain_devices(chains: int) -> tuple[int, int, str]:
    """(devices available, devices used, note): the largest device count ≤ available that
    divides ``chains`` (bartz shards the chain axis evenly)."""
    import jax

    available = jax.local_device_count()
    used = math.gcd(chains, available)
    note = "" if used == available else (
        f"{chains} chains not divisible by {available} devices: sharded over {used}")
    return available, used, note


def init_state(prior: TreePrior, a: float, x_all: np.ndarray, y_all: np.ndarray,
               error_scale: np.ndarray, missing: np.ndarray, chains: int,
               devices: int, precision: float = 1.0):
    """bartz initial state for rows ``x_all`` (scaled covariates), ``missing`` rows ignored."""
    import jax.numpy as jnp
    from bartz import mcmcstep
    from bartz.prepcovars import GivenSplitsBinner

    check_x64_off()
    xt = jnp.asarray(np.asarray(x_all, dtype=np.float32).T)
    xinfo = jnp.asarray(np.tile(prior.cutpoints(), (xt.shape[0], 1)))
    binner = GivenSplitsBinner(xt, xinfo=xinfo)
    return mcmcstep.init(
        X=binner.bin(xt), y=jnp.asarray(y_all, dtype=jnp.float32), offset=0.0,
        max_split=binner.max_split, num_trees=prior.num_trees,
        p_nonterminal=jnp.asarray(prior.p_nonterminal(), dtype=jnp.float32),
        leaf_prior_cov_inv=mcmcstep.Wishart(nu=None, rate=None,
                                            value=prior.num_trees / float(a) ** 2),
        # placeholder prior (never used: fixed_error_step holds the precision fixed)
        error_cov_inv=mcmcstep.Wishart(nu=1.0, rate=1.0, value=precision),
        error_scale=jnp.asarray(error_scale, dtype=jnp.float32),
        missing=jnp.asarray(missing, dtype=bool),
        num_chains=chains, mesh=dict(chains=devices) if devices > 1 else None)


@dataclass
class TemperedRun:
    """Output of :func:`run_tempered`: draws (chains, draws per chain, rows) at all rows of
    the state, per-stage records, the final bartz state."""

    draws: np.ndarray
    stages: list[dict[str, Any]]
    final_state: Any


def run_tempered(state, key, schedule: list[Stage], thin: int,
                 label: str = "[hbart]") -> TemperedRun:
    """Run ``schedule`` on ``state`` (donated), one ``run_mcmc`` call per stage, same key;
    progress is logged one step per stage, ``label`` first.

    The last stage must save draws; they are the predictions at every row
    (``MainTraceWithTrainPred.train_pred``, missing rows included). Per stage the error
    precision in force is read back from the traces (min, max over steps and chains).
    """
    import jax
    from bartz.mcmcloop import MainTrace, MainTraceWithTrainPred, run_mcmc

    records: list[dict[str, Any]] = []
    draws = None
    with progress_steps(len(schedule), f"{label} tempered MCMC stages", logger) as progress:
        for i, stage in enumerate(schedule):
            t = time.perf_counter()
            state = set_error_precision(state, 1.0 / stage.temperature)
            n_save = (stage.iterations - stage.burn) // thin
            result = run_mcmc(key, state, n_save, n_burn=stage.burn, n_skip=thin,
                              step=fixed_error_step,
                              main_trace_type=MainTraceWithTrainPred if n_save else MainTrace)
            if n_save:
                draws = np.asarray(jax.device_get(result.main_trace.train_pred), dtype=np.float64)
            state = jax.block_until_ready(result.final_state)
            used = np.concatenate([  # the precision in the state after every step of this stage
                np.asarray(jax.device_get(t.error_cov_inv)).ravel()
                for t in (result.burnin_trace, result.main_trace) if t.error_cov_inv.size])
            seconds = time.perf_counter() - t
            records.append({"stage": i, "kind": stage.kind, "temperature": stage.temperature,
                            "iterations": stage.iterations, "burn": stage.burn,
                            "saved": n_save,
                            "noise_sd_multiplier": math.sqrt(stage.temperature),
                            "error_precision": 1.0 / stage.temperature,
                            "error_precision_used": [float(used.min()), float(used.max())],
                            "seconds": seconds})
            progress.advance(message=f"stage {i + 1} ({stage.kind}): T = {stage.temperature:.3f}, "
                                     f"{stage.iterations} iterations, {seconds:.1f} s")
    if draws is None:
        raise ValueError("the schedule saves no draws")
    return TemperedRun(draws=draws, stages=records, final_state=state)


def posterior_draws(prior: TreePrior, a: float, x_train: np.ndarray, y_train: np.ndarray,
                    noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                    settings: dict) -> tuple[np.ndarray, dict[str, Any]]:
    """Draws (chains, draws per chain, n_eval + n_train) at [x_eval; x_train] and the
    settings record (see :meth:`HeteroscedasticBartFamily.posterior`)."""
    import bartz
    import jax

    from postrisk.core.jax_env import device_provenance

    check_x64_off()
    x_train = np.asarray(x_train, dtype=np.float64)
    x_eval = np.asarray(x_eval, dtype=np.float64).reshape(-1, x_train.shape[1])
    n_train, n_eval = x_train.shape[0], x_eval.shape[0]
    y, nv = training_targets(n_train, y_train, noise_var_train)
    chains, thin = int(settings["chains"]), int(settings["thin"])
    draws_per_chain, warmup = int(settings["draws_per_chain"]), int(settings["warmup"])
    temp = settings["tempering"]
    schedule = tempering_schedule(warmup, draws_per_chain, thin, float(temp["t0"]),
                                  int(temp["stages"]), float(temp["share"]))
    available, devices, note = chain_devices(chains)
    if note:
        logger.info("[hbart] %s", note)

    start = time.perf_counter()
    x_all = np.concatenate([x_eval, x_train])
    y_all = np.concatenate([np.zeros(n_eval), y])
    scale = np.concatenate([np.ones(n_eval), np.sqrt(nv)])
    missing = np.concatenate([np.ones(n_eval, dtype=bool), np.zeros(n_train, dtype=bool)])
    state = init_state(prior, a, x_all, y_all, scale, missing, chains, devices,
                       precision=1.0 / schedule[0].temperature)
    key = jax.random.key(int(rng.integers(2**31)))
    init_seconds = time.perf_counter() - start
    run = run_tempered(state, key, schedule, thin)
    final_precision = np.asarray(jax.device_get(run.final_state.error_cov_inv.value))
    record = {
        "conditioning": "mcmc", "sampler": f"bartz {bartz.__version__}", **device_provenance(),
        "bartz_version": bartz.__version__, "jax_version": jax.__version__,
        "x64": bool(jax.config.jax_enable_x64), "precision": "float32",
        "chains": chains, "draws_per_chain": draws_per_chain, "draws": chains * draws_per_chain,
        "warmup": warmup, "thin": thin,
        "tempering": {"t0": float(temp["t0"]), "stages": int(temp["stages"]),
                      "share": float(temp["share"])},
        "devices_available": available, "devices_used": devices, "device_note": note,
        "num_trees": prior.num_trees, "max_depth": prior.max_depth, "base": prior.base,
        "power": prior.power, "n_cutpoints": prior.n_cutpoints, "a": float(a),
        "error_precision": "fixed: 1/T per stage, 1 after warm-up (fixed_error_step)",
        "final_error_precision": [float(final_precision.min()), float(final_precision.max())],
        "stages": run.stages, "seconds_init": init_seconds,
        "seconds": time.perf_counter() - start,
    }
    return run.draws, record


class HeteroscedasticBartFamily:
    """f = sum of ``num_trees`` bartz prior trees with leaves N(0, a²/num_trees)."""

    name = FAMILY

    def fit(self, dataset: str, x: np.ndarray, target: np.ndarray, eval_index: np.ndarray,
            settings: dict, rng: np.random.Generator) -> dict:
        """Scale constant from ``settings["scale_draws"]`` unit-scale draws over
        ``x[eval_index]``; ``target`` is ignored (no data-dependent defaults)."""
        del target
        start = time.perf_counter()
        prior = TreePrior(num_trees=int(settings["num_trees"]),
                          max_depth=int(settings["max_depth"]), base=float(settings["base"]),
                          power=float(settings["power"]),
                          n_cutpoints=int(settings["n_cutpoints"]))
        x_eval = np.asarray(x, dtype=np.float64)[np.asarray(eval_index)]
        a = scale_constant(prior, x_eval, rng, n_draws=int(settings["scale_draws"]))
        logger.info("[%s/hbart] %d trees, max depth %d, %d cutpoints; scale constant a = %.4g",
                    dataset, prior.num_trees, prior.max_depth, prior.n_cutpoints, a)
        return {"family": FAMILY, "a": float(a), "num_trees": prior.num_trees,
                "max_depth": prior.max_depth, "base": prior.base, "power": prior.power,
                "n_cutpoints": prior.n_cutpoints, "scale_draws": int(settings["scale_draws"]),
                "seconds": time.perf_counter() - start}

    def sample(self, params: dict, x: np.ndarray, rng: np.random.Generator,
               info: dict | None = None) -> np.ndarray:
        """One draw of f* at the rows ``x`` (float64), by our sampler of bartz's tree prior."""
        if info is not None:
            info.update(method="tree prior draw (bartz's prior rules)")
        return sample_prior_draws(TreePrior.from_params(params), params["a"], x, rng, size=1)[0]

    def posterior(self, params: dict, x_train: np.ndarray, y_train: np.ndarray,
                  noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                  settings: dict) -> PosteriorResult:
        """bartz MCMC with tempered warm-up; draws at [x_eval; x_train], chain-major."""
        draws, record = posterior_draws(TreePrior.from_params(params), params["a"], x_train,
                                        y_train, noise_var_train, x_eval, rng, settings)
        return PosteriorResult.from_chains(draws, settings=record, diagnostics={})

