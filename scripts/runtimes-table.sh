#!/usr/bin/env bash
# Regenerates docs/fidelity.md: runs the differential suite (crates/cli/tests/it/runtimes.rs)
# against the installed containerd and podman, which writes the table of its run, and puts
# it under the page's fixed text (scripts/runtimes-notes.md). Needs root and both runtimes
# (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
trap 'rm -f "$table"' EXIT
PULLCHECK_RUNTIMES_TABLE="$table" cargo test --locked -p pullcheck-cli --test it runtimes:: -- --ignored
{
  cat scripts/runtimes-notes.md
  echo
  cat "$table"
} > docs/fidelity.md
echo "wrote docs/fidelity.md"
