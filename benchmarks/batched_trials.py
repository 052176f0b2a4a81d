"""How much faster a sweep's network trials train as one program than one after another.

The 10-trial NN-Ens sweep of ``methods_fit.py --sweep`` fixes the architecture and batch size
(:data:`methods_fit.SWEEP_FIXED`) and searches the learning rate, weight decay, momentum and
epochs, so its trials differ only in numbers the shared training loop traces. This benchmark
draws ``--trials`` such configurations from NN-Ens's search space (a fixed seed) and trains
them on the same rows (the sweep's 80% fit split of ``--n`` rows of the ``methods_fit``
instance) twice in one process:

* **one after another** (the baseline, what a sweep does today): ``NeuralEnsemble.fit`` per
  configuration, its ``n_members`` members vmapped as one model;
* **batched**: ``NeuralEnsemble.fit_together``, what a batched sweep does: every
  configuration's members stacked into one vmapped model of trials × members members, each with
  its own trial's optimiser numbers, epochs, initialisation and keys, the loop running to the
  longest trial's epochs.

Each arm is called once first (it compiles; one configuration one after another, all of them
batched) and then timed over all configurations; the printed ratio is trials per minute batched
over one after another, at steady state. Each batched configuration ends as its own fit would
(``tests/methods/nn/test_fit_together.py``); this measures time only. With ``--sweeps`` below,
it is what ``tuning.batch_size``'s default was chosen from.

``--same-epochs E`` gives every configuration E epochs: the batching alone, without the work a
batched loop spends on members past their own last epoch (it runs every member to the longest
trial's).

``--members 1`` trains one network per configuration, as most network methods do (MC dropout,
the Laplace, FSP, EDL and SWAG networks).

``--sweeps B`` runs the tuner itself instead: the 10-trial NN-Ens sweep and a 30-trial one
(architecture fixed as above, ``startup_trials`` 10), one trial at a time and ``batch_size`` B,
over 5 replicates (sampler seeds 1000·s + k, fit seed s; the two arms alternating, in one
process, after one compiling sweep of each), and prints each sweep's trials per minute and best
validation NLL, and per trial budget the ratio of the trials per minute and the mean change of
the best NLL (batched − one at a time; negative: batching found better).

Usage: ``python benchmarks/batched_trials.py [--trials 10] [--n 500] [--seed 0]
[--same-epochs E] [--members M] [--sweeps B]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from methods_fit import SWEEP_FIXED, instance  # noqa: E402
from postrisk.methods.nn.ensembles import NeuralEnsemble  # noqa: E402
from postrisk.tuning.sweep import split_indices  # noqa: E402

SEARCHED = ("learning_rate", "weight_decay", "momentum", "n_epochs")


def configurations(n: int, seed: int) -> list[dict]:
    """``n`` draws of the searched numbers from NN-Ens's search space (uniform, log-uniform
    where the space says so)."""
    rng = np.random.default_rng(seed)
    space = NeuralEnsemble.search_space
    out = []
    for _ in range(n):
        config = {}
        for name in SEARCHED:
            kind, low, high, *scale = space[name]
            if kind == "int":
                config[name] = int(rng.integers(low, high + 1))
            elif scale == ["log"]:
                config[name] = float(np.exp(rng.uniform(np.log(low), np.log(high))))
            else:
                config[name] = float(rng.uniform(low, high))
        out.append(config)
    return out


#: The fixed settings: the sweep's, and ``n_members`` (``--members``).
FIXED = dict(SWEEP_FIXED)


def one_after_another(configs: list[dict], x, y, seed: int) -> None:
    for config in configs:
        NeuralEnsemble(**FIXED, **config, random_state=seed).fit(x, y)


def batched(configs: list[dict], x, y, seed: int) -> None:
    """Every configuration's members as one model (module docstring)."""
    methods = [NeuralEnsemble(**FIXED, **config, random_state=seed) for config in configs]
    NeuralEnsemble.fit_together(methods, x, y)
    jax.block_until_ready(methods[-1].params_)


def sweeps(x, y, batch_size: int, budgets=(10, 30), seeds=range(5)) -> None:
    """The tuner one trial at a time against ``batch_size`` at a time (module docstring)."""
    import tempfile
    from pathlib import Path

    from postrisk.tuning import tune

    def run(n_trials: int, seed: int, size: int) -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            # replicate s: sampler seeds 1000·s + k (trial k) and fit seed s, so that no two
            # replicates share a proposal (consecutive sampler seeds would share the random
            # start-up trials, each seeded by its own k)
            result = tune("nn_ens", x, y, journal=Path(tmp) / "sweep.log", fixed=FIXED,
                          n_trials=n_trials, startup_trials=10, split_key=("bench",),
                          sampler_seed=1000 * seed, random_state=seed, batch_size=size)
            return 60.0 * n_trials / (time.perf_counter() - t0), float(result.best_value)

    run(4, 99, 1), run(4, 99, batch_size)  # compile both programs first
    print(f"sweeps of NN-Ens ({FIXED}) on n={len(y)} rows: one at a time vs batch_size "
          f"{batch_size}")
    print(f"{'trials':>6} {'seed':>4} {'trials/min 1':>13} {'trials/min B':>13} "
          f"{'best NLL 1':>11} {'best NLL B':>11}")
    for n_trials in budgets:
        rates, changes = [], []
        for seed in seeds:
            one, many = run(n_trials, seed, 1), run(n_trials, seed, batch_size)
            rates.append(many[0] / one[0])
            changes.append(many[1] - one[1])
            print(f"{n_trials:>6} {seed:>4} {one[0]:>13.1f} {many[0]:>13.1f} {one[1]:>11.4f} "
                  f"{many[1]:>11.4f}", flush=True)
        print(f"{n_trials} trials: trials per minute batched / one at a time "
              f"{np.mean(rates):.2f}× (range {min(rates):.2f}–{max(rates):.2f}); best NLL "
              f"change {np.mean(changes):+.4f} (range {min(changes):+.4f} to "
              f"{max(changes):+.4f})")


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--same-epochs", type=int, default=None,
                        help="give every configuration this many epochs (the batching alone, "
                             "without the longest trial's epochs spent on every member)")
    parser.add_argument("--sweeps", type=int, default=None, metavar="B",
                        help="run the tuner: one trial at a time against batch_size B")
    parser.add_argument("--members", type=int, default=NeuralEnsemble.defaults["n_members"],
                        help="members per configuration (1: a single network, as most network "
                             "methods train)")
    args = parser.parse_args()
    FIXED["n_members"] = args.members
    _, x, y, _, _ = instance(args.n, 10, 8, args.seed)
    if args.sweeps:  # the sweep splits its rows itself, as methods_fit.py --sweep's does
        sweeps(x, y, args.sweeps)
        return
    fit_idx, _ = split_indices(len(y), 0.2, "batched-trials")
    x, y = x[fit_idx], y[fit_idx]
    configs = configurations(args.trials, args.seed)
    if args.same_epochs:
        configs = [{**c, "n_epochs": args.same_epochs} for c in configs]
    print(f"{args.trials} NN-Ens configurations ({FIXED}; epochs "
          f"{sorted(c['n_epochs'] for c in configs)}) on n={len(y)} rows, "
          f"{os.cpu_count()} CPU core(s)")
    print(f"{'arm':<18} {'first call s':>13} {'steady s':>9} {'trials/min':>11}")
    print("  (first call: one configuration one after another, all of them batched; both with "
          "the compilation)")
    rates = {}
    for label, arm in (("one after another", one_after_another), ("batched", batched)):
        first = timed(arm, configs[:1] if arm is one_after_another else configs, x, y,
                      args.seed)
        steady = timed(arm, configs, x, y, args.seed)
        rates[label] = 60.0 * len(configs) / steady
        print(f"{label:<18} {first:>13.1f} {steady:>9.1f} {rates[label]:>11.2f}", flush=True)
    print(f"trials per minute, batched / one after another (steady state): "
          f"{rates['batched'] / rates['one after another']:.2f}×")

if __name__ == "__main__":
    main()
