# Two commands for a newcomer: `make demo` and `make test`. Each creates the environment first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv from PATH, else bootstrapped into .tools/ with pip (no system changes).
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
CORES ?= 2
# The fast tier runs in this many test processes (pytest-xdist), whole test files to each.
TEST_WORKERS ?= $(CORES)

.PHONY: env demo studies classification paper-slice embedded-suite gpu-bundle test test-slow test-cluster lint envs clean-results help

help:
	@echo "make demo       set up .venv and run the embedded demo end to end"
	@echo "make studies    the paper's studies, small (over the demo preset; <= 15 min)"
	@echo "make classification the offline datasets' classification instances and their checks (<= 5 min)"
	@echo "make paper-slice one Concrete cell per prior at the paper's settings (~140 min)"
	@echo "make embedded-suite the package's small suite, from the slice's results"
	@echo "make test       fast test tier (<= 10 min)"
	@echo "make test-slow  slow test tier (<= 40 min)"
	@echo "make test-cluster a real SLURM cluster: the smoke preset and the fault drills (root)"
	@echo "make lint       ruff + snakemake --lint + import contracts + the docs' checks"

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv

# The environment, exactly as locked, CPU only: everything — the extras pipeline (Snakemake, the
# samplers, the methods), offline-data (the GPL-3 copy of Concrete for the demo) and benchmark
# (GPJax). The lock's `gpu` extra (JAX's CUDA 12 plugin) is never installed here; it only feeds
# the cluster's GPU environment (workflow/envs/jax-gpu.yaml).
EXTRAS := --extra pipeline --extra offline-data --extra benchmark
$(VENV)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen $(EXTRAS) --compile-bytecode --python $(PYTHON)
	@touch $@

env: $(VENV)/.synced

demo: env
	$(BIN)/snakemake --configfile presets/demo.yaml --cores $(CORES) --quiet rules
	@$(BIN)/postrisk outputs --configfile presets/demo.yaml

# The studies' small versions, over the demo preset (same results folder; presets/studies.yaml).
STUDIES_CONFIG := presets/demo.yaml presets/studies.yaml
studies: env
	$(BIN)/snakemake studies --configfile $(STUDIES_CONFIG) --cores $(CORES) --quiet rules
	@$(BIN)/postrisk outputs $(foreach f,$(STUDIES_CONFIG),--configfile $(f)) --studies

# The classification instances of the offline datasets at demo sizes, over the demo preset
# (presets/classification.yaml): both priors, their stores, Table 3 per prior, the rank
# histograms and the page that shows them.
CLASSIFICATION_CONFIG := presets/demo.yaml presets/classification.yaml
classification: env
	$(BIN)/snakemake classification --configfile $(CLASSIFICATION_CONFIG) --cores $(CORES) --quiet rules
	@echo "classification instances: results/families/classification/tasks/ (postrisk.load_task)"
	@echo "their checks: results/families/classification/index.html (Table 3 per prior, rank histograms, every instance)"

# One Concrete cell per prior at the paper's settings (presets/paper_slice.yaml), in its own
# folder; prints the wall time and every stage's measured job times. The BNN-first pass
# (seed_selections) lets the GP and HBART posteriors be built on the valid seeds only.
SLICE_DIR := runs/paper_slice
# $(call slice_snakemake,TARGET): Snakemake over the slice's preset and folder (the target before
# --quiet, which would take it for one of its choices)
slice_snakemake = $(BIN)/snakemake $(1) --configfile presets/paper_slice.yaml \
	--directory $(SLICE_DIR) --cores $(CORES) --quiet rules
paper-slice: env
	@start=$$(date +%s); \
	$(call slice_snakemake,seed_selections) && \
	$(call slice_snakemake,) && \
	echo "paper slice: wall time $$(( $$(date +%s) - start )) s"
	$(BIN)/python benchmarks/job_times.py --results $(SLICE_DIR)/results \
		--configfile presets/paper_slice.yaml
	@$(BIN)/postrisk outputs --configfile presets/paper_slice.yaml --results $(SLICE_DIR)/results

# The small suite inside the package (postrisk.get_task; docs/release.md): the slice's valid
# instances of every prior (HBART too, on the same seeds), thinned, packed into
# src/postrisk/data/suite. The same BNN-first pass as paper-slice: no HBART posterior on a
# seed the BNN's R̂ rejects (10–23 minutes each on 2 cores).
embedded-suite: env
	$(call slice_snakemake,seed_selections)
	$(call slice_snakemake,release)
	$(BIN)/python -m postrisk.release.embedded $(SLICE_DIR)/results \
		--document DATA_CARD.md --document CITATION.cff

# What travels to a lent GPU machine for benchmarks/gpu_check.py (docs/design.md, "The
# paper-settings slice"): two Concrete sample stores, the wheels it lacks, this machine's times
# (the slice's own benchmark files after `make paper-slice`, else its measured table).
SLICE_TIMES = $(if $(wildcard $(SLICE_DIR)/results),$(SLICE_DIR)/results,benchmarks/measured/paper_slice.csv)
gpu-bundle: env
	$(BIN)/python benchmarks/gpu_check.py bundle --cpu-times $(SLICE_TIMES)

test: env
	$(BIN)/pytest -m "not slow and not cluster" -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15

test-slow: env
	$(BIN)/pytest -m "slow and not cluster" -q --durations=15

# A real single-node SLURM cluster (munge, MariaDB, slurmdbd, slurmctld, slurmd; Debian's
# packages, installed where missing: run as root), the smoke preset through the README's cluster
# command compared with a local run, and the fault drills (tests/cluster/). Every daemon it
# starts is stopped by its PID, whatever happens (the recorded PIDs, after a killed session).
CLUSTER_STATE ?= $(CURDIR)/.cluster
test-cluster: env
	@$(BIN)/python -m tests.cluster.slurm_cluster install
	@trap '$(BIN)/python -m tests.cluster.slurm_cluster stop $(CLUSTER_STATE)' EXIT; \
	POSTRISK_CLUSTER_STATE=$(CLUSTER_STATE) $(BIN)/pytest -m cluster tests/cluster -q \
		--durations=10

lint: env
	$(BIN)/ruff check src tests scripts benchmarks tools
	$(BIN)/snakemake --lint
	$(BIN)/lint-imports --no-cache
	$(BIN)/python tools/docs_check.py

envs: env
	$(BIN)/postrisk envs --write

clean-results:
	rm -rf results .snakemake
