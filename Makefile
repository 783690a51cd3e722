# gpufleet: two commands on a fresh machine.
#   make demo   builds the provider, starts a local control plane, applies examples/
#   make test   every test: unit, protocol and acceptance (terraform and tofu)
#   make test-long   the long runs (fuzzing a million executions per target)

.PHONY: all build install controlplane cluster cluster-down demo test test-long fuzz unit lint bench clean

all: build

build:
	cargo build --release

# Installs into Terraform's implied local mirror, so `source = "gpufleet/gpufleet"`
# resolves with a plain `terraform init` (and `tofu init`).
install:
	bash scripts/install.sh

controlplane:
	bash tests/controlplane/build.sh

cluster:
	bash tests/controlplane/cluster.sh up

cluster-down:
	bash tests/controlplane/cluster.sh down

demo:
	bash scripts/demo.sh

test:
	bash scripts/test.sh

test-long:
	bash scripts/test-long.sh

# A few seconds per fuzz target; `scripts/fuzz.sh long` for the long run.
fuzz:
	bash scripts/fuzz.sh smoke

unit:
	cargo test --lib

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

bench:
	bash scripts/bench-startup.sh

clean: cluster-down
	cargo clean
