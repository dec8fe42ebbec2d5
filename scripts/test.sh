#!/usr/bin/env bash
# The test command: installs what the tests need, then checks formatting, lints and runs
# every test. Tests start their own registries on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
