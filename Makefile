# oxnet: the README's two commands are `make demo` and `make test`.
# Everything Python runs in the project's virtualenv $(VENV) (made from $(PYTHON) on first use,
# with NumPy, pytest and the optional Pillow); `make clean-venv` removes it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export PYTHONPATH := $(CURDIR)/python
export CARGO_TERM_COLOR := never
# which build (debug/release) python/oxnet holds: dev and release each put theirs there
SHOW_BUILD = $(PY) -c "import oxnet; print('python/oxnet holds the', oxnet.__build__, 'build (oxnet.__build__)')"

.PHONY: demo test deps dev release bench fmt lint wheel clean clean-venv

$(VENV)/.deps: pyproject.toml
	@command -v cargo >/dev/null || { echo "cargo (Rust >= 1.80) is required: https://rustup.rs"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { echo "cannot create $(VENV): install the venv module of $(PYTHON) (Debian/Ubuntu: apt-get install python3-venv)"; exit 1; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "numpy>=1.23" "pytest>=7" "Pillow>=9"
	@touch $@

deps: $(VENV)/.deps

# Debug build of the extension, placed in python/oxnet for in-tree use.
dev: deps
	$(PY) tools/dev_build.py
	@$(SHOW_BUILD)

# Release build, placed in python/oxnet (replacing a debug one: see oxnet.__build__).
release: deps
	$(PY) tools/dev_build.py --release
	@$(SHOW_BUILD)

test: dev
	cargo test -p oxnet-core -q
	$(PY) -m pytest -q tests/python

demo: release
	@for f in examples/*.py; do echo "=== $$f"; $(PY) $$f || exit 1; done

bench: release
	$(PY) benches/run_all.py

wheel: deps
	$(PY) -m pip install -q "maturin>=1.5,<2"
	$(VENV)/bin/maturin build --release -o dist

fmt: deps
	cargo fmt --all
	@$(PY) -m ruff --version >/dev/null 2>&1 || $(PY) -m pip install -q ruff
	$(PY) -m ruff format python tests benches examples

lint: deps
	@$(PY) -m ruff --version >/dev/null 2>&1 || $(PY) -m pip install -q ruff
	cargo fmt --all -- --check
	cargo clippy --workspace -- -D warnings
	$(PY) -m ruff check python tests benches examples

clean:
	cargo clean
	rm -f python/oxnet/_native*.so

clean-venv:
	rm -rf $(VENV)
