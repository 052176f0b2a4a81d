"""What the studies' configuration tests share (tests/studies/*/test_config.py)."""

from postrisk.grid.config import merge_layers, validate_config


def validated_study(study, paper, change) -> dict:
    """``change`` to ``studies.<study>`` merged over config.yaml (``paper``), validated."""
    return validate_config(merge_layers([paper, {"studies": {study: change}}]))
