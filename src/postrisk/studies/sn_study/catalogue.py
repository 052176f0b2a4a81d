"""The SN study's tables and Figure 10: written by its summary, shown on the studies' page."""

from __future__ import annotations

from postrisk.grid.artefact import Artefact

_SN = "postrisk.studies.sn_study.tables:write_sn_study"
_SN_SETUP = ("Eight network methods in three arms on the same instances (balanced coverage, "
             "smooth-monotone noise): plain (the benchmark's configuration), SN (every dense "
             "backbone layer spectrally normalised, sn_coeff searched log-uniformly, the rest "
             "re-tuned) and WD (weight decay searched in a range 100–1000× the usual, the rest "
             "re-tuned). ")
_SN_SCALE = (" paper_*: the paper's values (13 datasets × 3 priors × 5 seeds, 30-trial "
             "sweeps); below the paper's scale not comparable.")

#: The study's entries, in their page's order.
CATALOGUE: tuple[Artefact, ...] = (
    Artefact("table13", "studies/table13.csv", "sn_study", _SN,
             title="Spectral normalisation vs strong weight decay, as paired changes against "
                   "the plain network (paper Table 13)",
             caption=_SN_SETUP + "Per method and arm: the mean over instances of Δρ = arm − "
                     "plain of ρ(ÊU, posterior excess risk) and ρ(ÊU, posterior variance), of "
                     "Δ local distance preservation (Spearman correlation of pairwise input and "
                     "backbone-feature distances over the 25% closest input pairs of at most "
                     "500 evaluation points), and the geometric-mean NMSE ratio arm/plain; 95% "
                     "percentile intervals from a bootstrap that resamples datasets (intervals "
                     "need two datasets)." + _SN_SCALE),
    Artefact("sn_mediation", "studies/sn_mediation.csv", "sn_study", _SN,
             title="Does the SN gain run through distance preservation? The mediation "
                   "regressions (paper App. D.4)",
             caption="Per method and pooled (with method effects), for Δρ with the posterior "
                     "excess risk and with the posterior variance: arm_only, Δρ ~ 1[SN] + "
                     "dataset effects (both arms); mediators, Δρ ~ Δpres + ΔlogNMSE + 1[SN] + "
                     "Δdepth + dataset effects; within_sn, the SN arm alone, standardised, Δρ ~ "
                     "Δpres + ΔlogNMSE + dataset effects. 95% intervals from a bootstrap over "
                     "datasets; interpretable = False where a method has too few instances "
                     "(the note says how many)." + _SN_SCALE),
    Artefact("table14", "studies/table14.csv", "sn_study", _SN,
             title="Deeper networks preserve distances worse and gain more from SN (paper "
                   "Table 14)",
             caption="Spearman correlation within datasets (dataset means removed from both "
                     "variables; pooled: also centred per method) of the plain network's "
                     "preservation with its tuned depth, width, epochs and gradient steps, and "
                     "of its depth with the SN gain in preservation and in ρ(ÊU, posterior "
                     "variance); p: the correlation's p-value. NaN where a variable does not "
                     "vary (e.g. every plain network at the same depth)." + _SN_SCALE),
    Artefact("fig10_sn_methods", "studies/fig10_sn_methods.png", "sn_study", _SN,
             kind="figure", reads=("table13",),
             title="The SN variants beside the benchmark's methods on the same instances "
                   "(paper Figure 10)",
             caption="Mean ρ(ÊU, posterior excess risk) (left) and ρ(ÊU, posterior variance) "
                     "(right) over the study's instances with an interval: every benchmark "
                     "method (grey), the study's SN and WD variants (coloured); dashed: "
                     "SNGP-Het."),
    Artefact("sn_instances", "studies/sn_instances.csv", "sn_study", _SN, shown=False,
             title="The SN study per (instance, method, arm), with the paired differences"),
)
