PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: docs docs-serve venv browser assets test test-all check lint demo demo-example bench bench-peers bench-exact clean peers-env

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,flower,docs]'
	touch $(STAMP)

venv: $(STAMP)

# The browser test (tests/test_reports_in_browser.py) needs Debian's chromium: installed here
# when we are root with apt-get, else the test skips with one line saying why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "installing chromium (apt-get) for the browser test"; \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	        >/dev/null 2>&1 || echo "could not install chromium: the browser test will skip"; \
	    else echo "no chromium and not root with apt-get: the browser test will skip"; fi; }

# the committed reports' shared plotly.js (results/fedsel-assets/plotly.min.js, not committed:
# written from the installed plotly, selection/plotly_js.py)
assets: $(STAMP)
	@$(BIN)/python -m selection.plotly_js results >/dev/null

test: $(STAMP) browser assets
	$(BIN)/python -m pytest -q -n 2 tests

test-all: $(STAMP) browser assets
	$(BIN)/python -m pytest -q -n 2 -m 'not cluster' tests
	$(BIN)/python -m pytest -q -m cluster tests

lint: $(STAMP)
	$(BIN)/ruff check selection fl_oracle tests benchmarks docs/hooks.py docs/versions.py
	$(BIN)/ruff format --check selection fl_oracle tests benchmarks docs/hooks.py docs/versions.py
	$(BIN)/lint-imports

check: lint test

# the showcase, into an untracked folder (runs/ is ignored: a clone stays clean)
demo: $(STAMP) assets
	$(BIN)/fedsel demo --out runs/demo --overwrite

# the committed example (results/demo/, quoted by the README): rebuilt on a clean tree only,
# so its record.toml names the commit that made it
demo-example: $(STAMP) assets
	@test -z "$$(git status --porcelain --untracked-files=no)" || \
	  { echo "demo-example: commit or stash your changes first (the record names the commit)"; exit 2; }
	$(BIN)/fedsel demo --out results/demo --overwrite

bench: $(STAMP)
	$(BIN)/python benchmarks/solvers.py
	$(BIN)/python benchmarks/domains.py
	$(BIN)/python benchmarks/oracle.py
	$(BIN)/python benchmarks/scale.py
	$(BIN)/python benchmarks/nsga2_peer.py
	$(BIN)/python benchmarks/flower_cost.py
	$(BIN)/python benchmarks/generic_model.py

# the exact peers need their own environment (pyaugmecon's pins clash with the project's)
bench-peers: $(STAMP) peers-env
	$(BIN)/python benchmarks/exact_peers.py --sizes 20,50,100,200,500 --cap 120

# the exact routes per instance family (about two hours on 2 cores)
bench-exact: $(STAMP)
	$(BIN)/python benchmarks/certified_fronts.py
	$(BIN)/python benchmarks/certified_fronts.py --sizes 500 --routes auto,bb
	$(BIN)/python benchmarks/exact_families.py --sizes 200,1000
	$(BIN)/python benchmarks/exact_families.py --families hetero6 --sizes 1000,5000 \
	  --points upper=0.9,high=0.75 --routes cbc/off,highs/off,cpsat/off,scip/on,auto/auto --tag _hetero6

# the documentation site (mkdocs.yml, docs/), versioned: this version built strictly and deployed
# with mike to the local branch gh-pages (nothing pushed), every version deployed so far exported
# to the untracked site/ (site/latest/ is this one; docs/versions.py)
docs: $(STAMP) assets
	$(BIN)/python docs/versions.py

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# the wheel and sdist a user installs (pip install dist/fedsel-*.whl), into the untracked dist/;
# the wheel is built from the sdist, so both hold the same files (tests/test_packaging.py)
# (a build-only environment of its own: the wheel is pure Python, it needs no torch)
.PHONY: dist
dist: .venv-build/.installed
	rm -rf dist
	.venv-build/bin/python -m build --outdir dist .

.venv-build/.installed:
	test -x .venv-build/bin/python || $(PY) -m venv .venv-build || python3 -m venv .venv-build
	.venv-build/bin/pip install --quiet --upgrade pip build
	touch .venv-build/.installed

clean:
	rm -rf $(VENV) .venv-build .pytest_cache .ruff_cache site

# Benchmark-only environment for benchmarks/exact_peers.py: pyaugmecon 1.0.8 pins numpy ~=1.25,
# pandas ~=2.0 and Pyomo ~=6.6, which clash with the project's, so it lives in its own venv.
# CBC comes from PuLP's bundled binary (the main .venv); highspy is installed for appsi HiGHS.
peers-env: .venv-peers/.installed

.venv-peers/.installed:
	test -x .venv-peers/bin/python || $(PY) -m venv .venv-peers || python3 -m venv .venv-peers
	.venv-peers/bin/pip install --quiet pyaugmecon==1.0.8 highspy
	touch .venv-peers/.installed
