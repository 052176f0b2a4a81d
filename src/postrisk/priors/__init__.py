"""Priors over functions (docs/design.md, "Priors"): the GP, HBART and BNN priors."""
