# gpufleet: two commands on a fresh machine.
#   make demo   builds the provider, starts a local control plane with Karpenter and Kueue,
#               applies examples/training-and-inference and runs its workloads
#   make test   every test: lint, unit and the offline, acceptance and system tiers (terraform and tofu)
#   make test-fast   unit tests and the offline tier: no cluster, no Go build, no lint
#   make test-long   the long runs: fuzzing, the reproducible release, the acceptance tier on Kubernetes 1.37

.PHONY: all build install controlplane cluster cluster-karpenter cluster-down demo demo-down test test-fast test-long fuzz unit lint bench bench-publish docs rbac versions release clean

all: build

build:
	cargo build --release

# Installs into Terraform's implied local mirror, so `source = "gpufleet/gpufleet"`
# resolves with a plain `terraform init` (and `tofu init`).
install:
	bash scripts/install.sh

controlplane:
	bash testbed/build.sh

cluster:
	bash testbed/cluster.sh up

# The same plus Karpenter's kwok provider and kwok: fleets get nodes.
cluster-karpenter:
	bash testbed/cluster.sh up --karpenter

cluster-down:
	bash testbed/cluster.sh down

demo:
	bash scripts/demo.sh

demo-down:
	bash scripts/demo-down.sh

test:
	bash scripts/test.sh

# Minutes, not the quarter hour of make test: the unit tests and the offline
# tier (tests/offline). A CLI or tool it drives that is not built yet
# (tofu, tfplugindocs: make controlplane) is skipped with a notice.
test-fast:
	cargo test --workspace --lib
	cargo test --test offline -- --test-threads=2

# Longer than make test allows: a million fuzz executions per target, and
# the release built twice from scratch, byte for byte the same.
test-long:
	bash scripts/test-long.sh

# A few seconds per fuzz target; `scripts/fuzz.sh long` for the long run.
fuzz:
	bash scripts/fuzz.sh smoke

unit:
	cargo test --workspace --lib

lint:
	bash scripts/lint.sh

# Benchmarks on a control plane of their own, into target/bench/;
# `make bench-publish` also writes docs/benchmarks.md, from a clean tree only.
bench:
	bash scripts/bench.sh

bench-publish:
	bash scripts/bench.sh --publish

# docs/ from the provider's schema, templates/ and examples/ (tfplugindocs).
docs:
	bash scripts/docs.sh

# docs/rbac.yaml from the permissions each type declares (provider::permissions());
# the unit test docs_rbac_yaml_is_generated_from_the_declared_permissions fails
# until it is regenerated. A running cluster rebinds it with `cluster.sh roles`.
rbac:
	cargo test --lib --quiet provider::tests::write_docs_rbac_yaml -- --ignored --exact

# The table of supported versions in README.md and templates/index.md.tmpl,
# from supported-versions.txt (then `make docs` for docs/index.md); the
# offline test supported_versions:: fails until both show it.
versions:
	cargo test --test offline --quiet supported_versions::write_the_table_of_supported_versions -- --ignored --exact

# Registry release files for this machine's platform in target/release/dist/
# (scripts/release.sh TRIPLE for another; GPUFLEET_SIGNING_KEY to sign).
release:
	bash scripts/release.sh

clean: cluster-down
	cargo clean
