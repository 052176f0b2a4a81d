"""The studies: one package each, behind one registration (``STUDY``, a
:class:`postrisk.grid.study.Study`) that the planner, the rules, the command line and the
studies' page read. A package here is registered by being here; another is named by the config
key ``study_packages`` (docs/contributing.md, "Adding a study").

Each package holds its declaration (``__init__``), its config schema (``config``), its units of
work (``units``), its catalogue entries (``catalogue``), its steps (``steps``: what a job runs)
and the library code only it uses (fits, statistics, tables, figures). The packages do not
import each other.
"""
