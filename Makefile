# gpufleet: two commands on a fresh machine.
#   make demo   builds the provider, starts a local control plane, applies examples/
#   make test   every test: unit, protocol and acceptance (terraform and tofu)

.PHONY: all build install controlplane cluster cluster-down demo test unit lint bench clean

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

unit:
	cargo test --lib

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

# Benchmarks on a control plane of their own; see docs/benchmarks.md.
bench:
	bash scripts/bench.sh

clean: cluster-down
	cargo clean
