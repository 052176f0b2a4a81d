"""Kernels written out by hand for the GP tests: a kernel with random parameters and the
kernel matrix computed entry by entry from each component's formula."""
from __future__ import annotations

import math

import numpy as np

from postrisk.gp import kernels as K
from postrisk.gp.kernels import Kernel


def random_kernel(components, d, rng) -> Kernel:
    """A kernel with random (not default) parameters."""
    params = {}
    for c in components:
        p = {"weight": float(rng.uniform(0.2, 1.0))}
        if c in K.STATIONARY or c == "arccos0":
            p["lengthscale"] = rng.uniform(0.2, 1.5, d).tolist()
        if c == "rq":
            p["alpha"] = float(rng.uniform(0.3, 3.0))
        if c == "powexp":
            p["power"] = float(rng.uniform(0.5, 2.0))
        if c == "periodic":
            p["lengthscale"] = rng.uniform(0.5, 2.0, d).tolist()
            p["period"] = rng.uniform(0.3, 1.5, d).tolist()
        if c == "linear":
            p["variance"] = rng.uniform(0.5, 3.0, d).tolist()
        if c == "arccos0":
            p["bias"] = float(rng.uniform(0.3, 2.0))
        params[c] = p
    return Kernel(tuple(components), params)


def reference_component(c, p, u, v) -> float:
    """Textbook formula of one component at one pair, plain numpy."""
    if c in K.STATIONARY:
        r = math.sqrt(float(np.sum(((u - v) / np.asarray(p["lengthscale"])) ** 2)))
        return {"matern12": lambda: math.exp(-r),
                "matern32": lambda: (1 + math.sqrt(3) * r) * math.exp(-math.sqrt(3) * r),
                "matern52": lambda: (1 + math.sqrt(5) * r + 5 * r * r / 3)
                * math.exp(-math.sqrt(5) * r),
                "rbf": lambda: math.exp(-r * r / 2),
                "rq": lambda: (1 + r * r / (2 * p["alpha"])) ** (-p["alpha"]),
                "powexp": lambda: math.exp(-r ** p["power"])}[c]()
    if c == "periodic":
        s = np.sin(np.pi * (u - v) / np.asarray(p["period"])) ** 2
        return math.exp(-2 * float(np.sum(s / np.asarray(p["lengthscale"]) ** 2)))
    if c == "linear":
        return float(np.sum(np.asarray(p["variance"]) * (u - 0.5) * (v - 0.5)))
    if c == "arccos0":
        tu = np.concatenate([[p["bias"]], (u - 0.5) / np.asarray(p["lengthscale"])])
        tv = np.concatenate([[p["bias"]], (v - 0.5) / np.asarray(p["lengthscale"])])
        cos = float(tu @ tv / (np.linalg.norm(tu) * np.linalg.norm(tv)))
        return 1 - math.acos(min(1.0, max(-1.0, cos))) / math.pi
    raise AssertionError(c)


def reference_matrix(kernel: Kernel, x1, x2) -> np.ndarray:
    total = sum(kernel.params[c]["weight"] for c in kernel.components)
    out = np.zeros((len(x1), len(x2)))
    for i, u in enumerate(x1):
        for j, v in enumerate(x2):
            out[i, j] = sum(kernel.params[c]["weight"] / total
                            * reference_component(c, kernel.params[c], u, v)
                            for c in kernel.components)
    return out
