#!/usr/bin/env bash
# The test command: installs what the tests need, then checks formatting, lints and the
# rendered docs (rustdoc -D warnings), runs every test, then the Go package of
# integrations/vela (gofmt, go vet, go test) against freshly built debug binaries.
# Tests start their own registries on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every public item's doc comment must render: broken intra-doc links and stray HTML fail.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
cargo test --workspace --locked
# Upstream test data (go-vela, containers/image) is not part of the repository: the tests
# that read it are #[ignore]d and run here when the directory is beside the checkout.
upstream=../shared/upstream-testdata
if [ -d "$upstream" ]; then
  cargo test --locked -p pullcheck-input -p pullcheck-mirrors --test it -- --ignored
else
  echo "SKIPPED: the upstream test-data tests (pullcheck-input upstream::*, pullcheck-mirrors upstream_testdata::*): $(pwd)/$upstream is missing"
fi

# The differential suite (crates/cli/tests/it/runtimes.rs): pullcheck against the real
# containerd and podman, started by the test under /tmp, loopback registries only; it
# needs both runtimes and root.
if command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1 \
  && command -v podman >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  cargo test --locked -p pullcheck-cli --test it runtimes:: -- --ignored
else
  echo "SKIPPED: the differential suite against containerd and podman (pullcheck-cli runtimes::): needs containerd, ctr and podman installed and root"
fi

# The Vela worker package: its tests run the real pullcheck (check and serve) and
# the testkit's registries, found through PULLCHECK_BIN and PULLCHECK_TESTKIT_BIN.
cargo build --locked -p pullcheck-cli -p pullcheck-testkit
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug"
(
  cd integrations/vela
  unformatted=$(gofmt -l .)
  if [ -n "$unformatted" ]; then
    echo "gofmt: not formatted: $unformatted" >&2
    exit 1
  fi
  go vet ./...
  PULLCHECK_BIN="$bin/pullcheck" PULLCHECK_TESTKIT_BIN="$bin/pullcheck-testkit" go test -count=1 ./...
)

# The go-vela/worker patch applies to its release (needs a go-vela/worker git mirror
# in VELA_WORKER_GIT; prints SKIPPED without one).
integrations/vela/worker/check-patch.sh
