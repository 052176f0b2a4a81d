"""The 1-D sandbox's tables and figure: written by its summary, shown on the studies' page."""

from __future__ import annotations

from postrisk.grid.artefact import Artefact

_SANDBOX = "postrisk.studies.sandbox.tables:write_sandbox"
_SANDBOX_SETUP = ("The closed-form 1-D sandbox (Paplhám et al., 2026, §4.2; the same at every "
                  "scale): f* a least-squares RBF fit to sin(0.2/(x + 0.16)³), the exact "
                  "Bayesian linear posterior on the same features from one training sample "
                  "with a suppressed region, heteroscedastic noise; squared loss, uniform test "
                  "density. ")

#: The study's entries, in their page's order.
CATALOGUE: tuple[Artefact, ...] = (
    Artefact("sandbox_scorers", "studies/sandbox_scorers.csv", "sandbox", _SANDBOX,
             title="Which inputs do the Bayes-optimal scorers reject? (the 1-D sandbox)",
             caption=_SANDBOX_SETUP + "Per scorer (OOD likelihood ratio p_ood/p_id, BALD, "
                     "expected error reduction, risk T*, regret E*), the intervals of x it "
                     "rejects at the coverage and their test-density mass; the coverage, risk "
                     "E[C·T*] and regret E[C·E*] of what it accepts (unnormalised), and the "
                     "realised regret E[C·(m − f*)²] of the posterior mean; lowest_risk / "
                     "lowest_regret: the best any selector reaches at the coverage; "
                     "regret_above_oracle: the regret above Theorem 1's best selector of the "
                     "same coverage and at most the same risk (λ swept in steps of 1/400)."),
    Artefact("sandbox_overlap", "studies/sandbox_overlap.csv", "sandbox", _SANDBOX,
             title="How much do the scorers' rejected sets overlap? (the 1-D sandbox)",
             caption="Test-density mass both scorers reject at the coverage, as a share of the "
                     "smaller rejected mass (1: the same inputs; 0: disjoint)."),
    Artefact("fig_sandbox", "studies/fig_sandbox.png", "sandbox", _SANDBOX, kind="figure",
             reads=("sandbox_scorers", "sandbox_intervals"),
             title="The Bayes-optimal scorers reject different inputs (the 1-D sandbox)",
             caption="(a) f*, the training sample, the exact posterior mean ± 2 SD, the noise "
                     "SD and the training density; (b) each scorer scaled to [0, 1]; (c) what "
                     "each rejects at the coverage; (d) risk against regret of each accepted "
                     "set, and the oracle front of thresholding (1 − λ)A* + λE*, λ ∈ [½, 1] "
                     "(Theorem 1)."),
    Artefact("sandbox_oracle_surface", "studies/sandbox_oracle_surface.csv", "sandbox",
             _SANDBOX, shown=False,
             title="Theorem 1's oracle surface in the sandbox: coverage, risk and regret of "
                   "thresholding (1 − λ)A* + λE* per λ and target coverage"),
    Artefact("sandbox_intervals", "studies/sandbox_intervals.csv", "sandbox", _SANDBOX,
             shown=False, title="Every rejected interval per scorer, with its mass"),
    Artefact("sandbox_curves", "studies/sandbox_curves.csv", "sandbox", _SANDBOX, shown=False,
             title="The sandbox on its grid: f*, posterior, densities, T*, A*, E*, every "
                   "scorer and what it accepts"),
    Artefact("sandbox_training", "studies/sandbox_training.csv", "sandbox", _SANDBOX,
             shown=False, title="The sandbox's training sample"),
)
