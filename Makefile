# The two commands of the README: `make run` (the full suite, writing reports) and `make test`.
# Both install everything from the committed locks first: Python from requirements.lock (exact versions),
# each Node driver (adapters/<dir>/ with a package-lock.json: the Vercel AI SDK's, Mastra's) with `npm ci`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.installed
# every Node project an adapter runs from: adapters/<dir>/package-lock.json, each with its own stamp in .venv
NODE_DIRS := $(patsubst %/package-lock.json,%,$(wildcard adapters/*/package-lock.json))
NODE_STAMPS := $(foreach d,$(NODE_DIRS),$(VENV)/.node-installed-$(notdir $(d)))
UV_VERSION := 0.13.9
# Every package cache that make and the tests use lives in the checkout, under .venv/ (deleted with it): what an
# offline test finds never depends on what else ran on the machine (tests/offline_fixtures.py says the same).
export UV_CACHE_DIR := $(CURDIR)/$(VENV)/cache/uv
export npm_config_cache := $(CURDIR)/$(VENV)/cache/npm

.PHONY: install run check test lint typecheck lock clean browser publish stability bench matrix offline-fixtures

# `make install` installs every framework; `make install FRAMEWORKS="openai-agents vercel-ai"` only those (their
# extras with the lock's versions, their Node projects; the frameworks' ids as `loopbench list` shows them,
# mapped by loopbench/install_plan.py from the adapters' own facts). `make run FRAMEWORKS=...` runs only those.
FRAMEWORKS ?=
ifeq ($(strip $(FRAMEWORKS)),)
install: $(PY_STAMP) $(NODE_STAMPS)
	@for d in $(NODE_DIRS); do stamp=$(VENV)/.node-installed-$$(basename $$d); \
	  test -f $$d/node_modules/.package-lock.json || { rm -f $$stamp && $(MAKE) --no-print-directory $$stamp; } || exit 1; done
else
install:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install -q --python "$$(realpath $(BIN))/python" -c requirements.lock -e "$$(dirname "$$(realpath pyproject.toml)")"
	extras=$$($(BIN)/python -m loopbench.install_plan extras $(FRAMEWORKS)) || exit 2; \
	  $(BIN)/uv pip install -q --python "$$(realpath $(BIN))/python" -c requirements.lock \
	    -e "$$(dirname "$$(realpath pyproject.toml)")$${extras:+[$$extras]}"
	dirs=$$($(BIN)/python -m loopbench.install_plan node $(FRAMEWORKS)) || exit 2; \
	  for d in $$dirs; do (cd $$d && npm ci --no-audit --no-fund --loglevel=error) || exit 1; done
endif

$(PY_STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip sync -q --python $(BIN)/python requirements.lock
	@# real paths: a directory whose .venv and sources are symlinks (tests/test_ci_recipe.py) must not write its
	@# own path into the checkout's entry scripts and editable install
	$(BIN)/uv pip install -q --python "$$(realpath $(BIN))/python" --no-deps -e "$$(dirname "$$(realpath pyproject.toml)")"
	touch $@

# its stamp lives in .venv beside npm's cache, so a new .venv refills the cache the offline tests read
$(VENV)/.node-installed-%: adapters/%/package-lock.json adapters/%/package.json $(PY_STAMP)
	cd adapters/$* && npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: install
	$(BIN)/loopbench run $(foreach f,$(FRAMEWORKS),-f $(f))

# The HTML report is tested in a real headless browser: Debian's chromium, installed here when missing
# (a test tool's own browser download does not work offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The offline tests (the wheel, the external adapter, the version matrix) install from the checkout's uv cache:
# each of their installs is run once online here, exactly as the test repeats it offline (stamped in .venv).
offline-fixtures: install
	$(BIN)/python -m tests.offline_fixtures

# The unit tier (tests/tiers.py): the modules that say `TIER = "unit"`, their tests that start no process and
# import no SDK — the inner loop, under a minute. Only those modules are collected (collecting the others imports
# SDKs and takes longer than the tier runs).
UNIT_MODULES = $(shell grep -l '^TIER = "unit"' tests/test_*.py)
check: install
	$(BIN)/python -m pytest -q -m unit $(UNIT_MODULES)

# The whole gate: lint, types and every tier (unit, process, suite), over two pytest processes (tests/conftest.py
# keeps the suite tests on one of them: the shared suite run happens once).
TEST_WORKERS ?= 2
test: install browser offline-fixtures lint typecheck
	LOOPBENCH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

lint: install
	$(BIN)/ruff check loopbench harness adapters reports scenarios tests

# mypy over the one namespace (pyproject's [tool.mypy]; loopbench/harness etc. are symlinks to the folders)
typecheck: install
	$(BIN)/mypy

# The committed comparison: a full run with the locked versions, its reports copied to reports/published/.
PUBLISHED := reports/published
publish: install
	rm -rf results/publish
	$(BIN)/loopbench run --out results/publish
	mkdir -p $(PUBLISHED)
	cp results/publish/results.jsonl results/publish/report.md results/publish/report.html \
	   results/publish/matrix.csv results/publish/summary.json results/publish/*.png $(PUBLISHED)/

# Do the timing-sensitive cells hold on a busy machine? Each one 3 times beside a CPU hog, compared with the
# publication; the result is stored beside it (stability.json) and shown in its report's Stability section.
# Exits 1 when a repetition changed (the result is stored either way: the report says what changed).
stability: install
	rm -rf results/stability
	$(BIN)/loopbench stability --published $(PUBLISHED) --out results/stability; status=$$?; \
	  cp results/stability/stability.json $(PUBLISHED)/ && \
	  $(BIN)/loopbench report $(PUBLISHED) --format md,html && exit $$status

bench: install
	$(BIN)/loopbench bench

# The committed version matrix: the releases in reports/matrix/versions.yaml, each in its own cached
# environment (downloaded once), the slow scenarios left out; its results and drift report in reports/matrix/.
MATRIX := reports/matrix
matrix: install
	rm -rf results/matrix
	$(BIN)/loopbench matrix --versions-file $(MATRIX)/versions.yaml --quick --out results/matrix
	cp results/matrix/results.jsonl results/matrix/sets.json results/matrix/report.md results/matrix/report.html $(MATRIX)/

# Refresh the Python lock deliberately (an SDK upgrade is a diffed step): then `make run` and
# `loopbench diff reports/published results/latest`.
lock:
	$(BIN)/uv pip compile -q pyproject.toml --extra all --extra ray --extra dev --python-version 3.11 -o requirements.lock

clean:
	rm -rf $(VENV) $(addsuffix /node_modules,$(NODE_DIRS)) results
