"""NGBoost-Bag's members fitted in parallel against one after another: the time and the fit.

At each size ``n×d`` of ``--sizes`` (default Concrete's training size 350×8 and SARCOS's
4,800×21) the same bag — NGBoost-Bag's defaults (10 members, 500 iterations, depth 3, learning
rate 0.01, 80% of the rows each), seed ``--seed`` — is fitted with ``n_threads`` =
``--threads`` (2: the members on worker processes,
:data:`postrisk.methods.ngboost_bag.MEMBER_BACKEND`)
and with ``n_threads`` = 1 (the sequential loop), in that order, in this process. Printed per
size: the seconds of each, their ratio (sequential / parallel: the speed-up) and whether the
predictions at 500 evaluation points (mean, AU, EU) are bit-identical; an exit status of 1 if
any are not.

Before the sizes, a tiny bag is fitted in parallel once to start the worker pool, and its
seconds are printed as the start-up: a job fitting several seeds or trials pays it once
(joblib keeps the pool between fits, 300 s idle at most).

Data: x uniform in [0, 1]^d; y = sin(2πx₁) + x₂² − x₃ + 0.5·x₄x₅ + ε, ε ~ N(0, 0.02 +
0.28·x₁) (heteroscedastic along the first column); evaluation points uniform in
[−0.25, 1.25]^d.

``--backend threading`` runs the parallel fits on joblib threads instead (the comparison the
backend was chosen by; the members then share the GIL, and their one-thread BLAS limits, set
per member, interleave: for measuring only).

Usage: ``python benchmarks/ngboost_bag_parallel.py [--sizes 350x8 4800x21] [--threads 2]
[--n-regressors 10] [--seed 0] [--backend loky|threading]`` (on 2 cores about 1.5 minutes at
350×8 — 2 cores at n = 350 fit a member in about 1.4 s — and 6 minutes at 4,800×21).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from postrisk.methods import ngboost_bag
from postrisk.methods.ngboost_bag import NGBoostBag

#: Evaluation points per size.
N_EVAL = 500


def make_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (n, d), y (n,) and x_eval (N_EVAL, d) as the module docstring says (d ≥ 5)."""
    if d < 5:
        raise ValueError(f"the target uses five columns, got d = {d}")
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, d))
    f = np.sin(2 * np.pi * x[:, 0]) + x[:, 1] ** 2 - x[:, 2] + 0.5 * x[:, 3] * x[:, 4]
    y = f + np.sqrt(0.02 + 0.28 * x[:, 0]) * rng.normal(size=n)
    return x, y, rng.uniform(-0.25, 1.25, size=(N_EVAL, d))


def timed_fit(x: np.ndarray, y: np.ndarray, n_threads: int, seed: int,
              n_regressors: int) -> tuple[float, NGBoostBag]:
    t0 = time.perf_counter()
    bag = NGBoostBag(random_state=seed, n_threads=n_threads, n_regressors=n_regressors)
    bag.fit(x, y)
    return time.perf_counter() - t0, bag


def parse_size(text: str) -> tuple[int, int]:
    n, _, d = text.lower().partition("x")
    return int(n), int(d)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["350x8", "4800x21"],
                        help="n×d per size, e.g. 350x8 (default: 350x8 4800x21)")
    parser.add_argument("--threads", type=int, default=2, help="n_threads of the parallel fit")
    parser.add_argument("--n-regressors", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=["loky", "threading"],
                        default=ngboost_bag.MEMBER_BACKEND,
                        help=f"joblib backend of the parallel fit (default "
                             f"{ngboost_bag.MEMBER_BACKEND})")
    args = parser.parse_args(argv)
    ngboost_bag.MEMBER_BACKEND = args.backend

    x, y, _ = make_data(100, 5, args.seed)
    t0 = time.perf_counter()
    NGBoostBag(n_estimators=5, n_regressors=args.threads, n_threads=args.threads).fit(x, y)
    print(f"backend {args.backend}, {args.threads} workers: start-up (a tiny bag) "
          f"{time.perf_counter() - t0:.1f} s")

    print(f"| n × d | 1 thread (s) | {args.threads} threads (s) | speed-up | identical |")
    print("|---|---|---|---|---|")
    all_same = True
    for size in args.sizes:
        n, d = parse_size(size)
        x, y, x_eval = make_data(n, d, args.seed)
        s_par, par = timed_fit(x, y, args.threads, args.seed, args.n_regressors)
        s_seq, seq = timed_fit(x, y, 1, args.seed, args.n_regressors)
        a, b = par.predict(x_eval), seq.predict(x_eval)
        same = all(np.array_equal(getattr(a, k), getattr(b, k))
                   for k in ("mean", "aleatoric_var", "epistemic_var"))
        all_same &= same
        print(f"| {n:,} × {d} | {s_seq:.1f} | {s_par:.1f} | {s_seq / s_par:.2f}× | "
              f"{'yes' if same else 'NO'} |", flush=True)
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
