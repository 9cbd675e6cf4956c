# memlib: `make figures` regenerates every figure and table, `make test` proves it works.
# Both create the virtual environment .venv on first use.
SCALE ?= small
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The folders memlib writes, as memlib.paths reads them: $MEMLIB_BUILD and $MEMLIB_FIGURES
# when set, else build/ and figures/ here. Read with $(value ...): make would expand a `$(...)`
# in a variable from the environment, and run a `$(shell ...)` there even under `make -n`.
BUILD := $(or $(value MEMLIB_BUILD),build)
FIGURES := $(or $(value MEMLIB_FIGURES),figures)
# make cannot take a space or a `$` in a file name: `make figures` stops with one line instead
# of a cryptic error (the other targets read the folders through memlib.paths and take them)
SPACED := $(strip $(foreach v,MEMLIB_BUILD MEMLIB_FIGURES,$(if $(or $(word 2,$(value $(v))),$(findstring $$,$(value $(v)))),$(v))))
ifneq ($(SPACED),)
ifneq ($(filter figures,$(or $(MAKECMDGOALS),figures)),)
$(error memlib: $(firstword $(SPACED))="$(value $(firstword $(SPACED)))" has a space or a $$, which make cannot take in file names; choose another folder for `make figures`)
endif
# the other targets never name these folders in a rule: they must not become rules' names
BUILD := build
FIGURES := figures
endif

# `make figures` builds two notebooks at a time where there are two cores or workers: each
# computes its study's missing runs in its own pool of workers, and a second study fills the
# cores one study leaves idle between its waves and while it renders. The bits are those of
# one at a time (no cache key holds the number of workers). `make -j1 figures`: one at a time.
ifneq ($(filter figures,$(or $(MAKECMDGOALS),figures)),)
JOBS ?= $(if $(filter 1,$(or $(value MEMLIB_WORKERS),$(shell nproc 2>/dev/null || echo 1))),1,2)
MAKEFLAGS += -j$(JOBS)
endif

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.py))
STEMS := $(notdir $(NOTEBOOKS:.py=))
EXECUTED := $(STEMS:%=$(BUILD)/$(SCALE)/%.ipynb)
# Notebooks re-run when memlib's code changes; unchanged experiments then load from the cache.
MEMLIB_SRC := $(wildcard memlib/*.py memlib/*/*.py memlib/*/*/*.py) memlib/memlib.mplstyle
# At full scale each study's training runs first, outside the notebook, under torchrun with
# NPROC processes (one per GPU); the notebook then reads the results from the cache.
NPROC ?= 1
RUN_FIRST = $(if $(filter full,$(SCALE)),$(VENV)/bin/torchrun --standalone \
	--nproc_per_node=$(NPROC) -m memlib run $* --scale full)
CLAIMS := $(if $(filter small,$(SCALE)),$(FIGURES)/CLAIMS.md,$(FIGURES)/$(SCALE)/CLAIMS.md)

.PHONY: figures test lint sync clean venv book class-kit vendor-check
.DELETE_ON_ERROR:

figures: $(CLAIMS)

venv: $(STAMP)

# The versions in constraints.txt (what the committed results and a class kit were made with:
# every cache key holds them), so that a kit made today loads next week. A laptop without a
# GPU may take torch's CPU-only build, a fraction of the CUDA build's size:
# `make venv TORCH_INDEX=https://download.pytorch.org/whl/cpu` (where that index has the
# pinned version); a kit then loads only where torch is the same build (`memlib kit-check`).
TORCH_INDEX ?=
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install --quiet --index-url $(TORCH_INDEX) \
		-c constraints.txt torch torchvision)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

$(CLAIMS): $(EXECUTED) | $(STAMP)
	$(PY) -m memlib claims --scale $(SCALE)

$(BUILD)/$(SCALE)/%.ipynb: notebooks/%.py params/$(SCALE)/%.yaml $(MEMLIB_SRC) | $(STAMP)
	$(RUN_FIRST)
	$(PY) -m memlib notebook $< --scale $(SCALE)

# the lens watches study 1's runs as study 1's parameter file sets them, and compares its
# training with study 1's cached runs: built after notebook 01 where both are built
$(BUILD)/$(SCALE)/05_memorization_lens.ipynb: params/$(SCALE)/01_random_label_heads.yaml \
	| $(BUILD)/$(SCALE)/01_random_label_heads.ipynb

# A static HTML book of the executed notebooks as published under figures/ (nothing is
# executed; run `make figures` first for fresh outputs): $(BUILD)/book/html/index.html.
book: | $(STAMP)
	$(PY) -m memlib book --scale $(SCALE)

# A class starts from computed results: `make class-kit` packs the results cache that
# `make figures` filled ($MEMLIB_CACHE, else results/cache) into
# $MEMLIB_BUILD/class-kit.tar.gz (else build/): its entries only, nothing that runs (no compiled
# kernel, no executable file). On each student's clone,
# `mkdir -p results && tar -xzf class-kit.tar.gz -C results` puts it in place, and every
# notebook and the first exercise then load what is already computed instead of a cold run.
class-kit: | $(STAMP)
	$(PY) -m memlib class-kit

test: $(STAMP)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

# The studies' kernels and first steps under an emulated AMD EPYC (QEMU's user mode, Debian's
# qemu-user; 10-20 minutes, most of it importing torch) against the hashes recorded on an
# Intel Xeon: a difference names an operation whose bits depend on the processor.
vendor-check: $(STAMP)
	PYTHONPATH=. qemu-x86_64 -cpu EPYC-Rome $(PY) tests/vendor_ops.py --compare tests/fixtures/vendor_hashes.json

lint: $(STAMP)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports

# Make an .ipynb of every .py notebook for JupyterLab, with the .venv's kernel (python3 of the
# Jupyter in .venv). The .ipynb is not committed and is paired with nothing (jupytext.toml opens
# only .ipynb files as notebooks), so saving in Jupyter writes the .ipynb alone: the tracked .py
# stays as git has it and `make figures` has nothing to redo. An .ipynb is (re)made from its
# .py, outputs kept, and takes the .py's time; one saved since (newer than its .py) holds a
# student's edits and is kept (only an old pairing is taken out of it); delete it for the
# committed version, or `.venv/bin/jupytext --to py:percent notebooks/NAME.ipynb` carries its
# edits into the source. The .py is only read.
UNPAIRED := --update-metadata '{"jupytext":null}'
sync: $(STAMP)
	@fresh=; for py in $(NOTEBOOKS); do nb="$${py%.py}.ipynb"; \
	  if [ "$$nb" -nt "$$py" ]; then \
	    echo "memlib: kept $$nb, saved after $$py (delete it for the committed version)"; \
	    $(VENV)/bin/jupytext --quiet $(UNPAIRED) "$$nb" || exit 1; \
	  else fresh="$$fresh $$py"; fi; \
	done; \
	if [ -n "$$fresh" ]; then $(VENV)/bin/jupytext --quiet --to ipynb --update \
	  --set-kernel python3 $(UNPAIRED) $$fresh || exit 1; \
	  for py in $$fresh; do touch -r "$$py" "$${py%.py}.ipynb"; done; fi

# removes the folders memlib.paths names ($MEMLIB_CACHE, $MEMLIB_BUILD, $MEMLIB_FIGURES/smoke)
# as far as memlib made them (memlib.kit.clean): what memlib did not make stays, named
clean:
	test ! -x $(PY) || $(PY) -m memlib clean
	rm -rf .pytest_cache .ruff_cache .import_linter_cache .grimp_cache
