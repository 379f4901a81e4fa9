# oxnet: the README's two commands are `make demo` and `make test`.
PY ?= python3
export PYTHONPATH := $(CURDIR)/python
export CARGO_TERM_COLOR := never

.PHONY: demo test deps mpi dev release bench fmt lint wheel clean

deps:
	@command -v cargo >/dev/null || { echo "cargo (Rust >= 1.80) is required: https://rustup.rs"; exit 1; }
	@$(PY) -c "import numpy, pytest" 2>/dev/null || $(PY) -m pip install -q "numpy>=1.23" "pytest>=7"

# Debug build of the extension, placed in python/oxnet for in-tree use.
dev: deps
	$(PY) tools/dev_build.py

release: deps
	$(PY) tools/dev_build.py --release

# Open MPI (apt, as root) and mpi4py for the distributed tests; without them those tests skip, saying why.
mpi:
	@command -v mpirun >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null; } || echo "Open MPI not installed: MPI tests will skip"
	@$(PY) -c "import mpi4py" 2>/dev/null || $(PY) -m pip install -q mpi4py || echo "mpi4py not installed: MPI tests will skip"

test: dev mpi
	cargo test -p oxnet-core -q
	$(PY) -m pytest -q tests/python

demo: release mpi
	@for f in examples/*.py; do echo "=== $$f"; $(PY) $$f || exit 1; done

bench: release
	$(PY) benches/run_all.py

wheel:
	$(PY) -m pip install -q "maturin>=1.5,<2"
	maturin build --release -o dist

fmt:
	cargo fmt --all
	$(PY) -m ruff format python tests benches examples

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace -- -D warnings
	$(PY) -m ruff check python tests benches examples

clean:
	cargo clean
	rm -f python/oxnet/_native*.so
