"""Priors over functions (SPEC §4): the GP, HBART and BNN families."""
