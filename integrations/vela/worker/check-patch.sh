#!/bin/sh
# Checks that image-check.patch applies cleanly to the go-vela/worker release it is
# written against (RELEASE below), on a work tree made from a local git mirror of
# go-vela/worker: `git archive RELEASE | tar -x` into a scratch directory, then
# `git apply --check`, then applies it and runs gofmt on the result. The mirror is
# $VELA_WORKER_GIT (a git directory, e.g. from `git clone --mirror`); without one it
# prints a SKIPPED line and exits 0. It fails only when the patch does not apply.
set -eu
RELEASE=v0.28.1
here=$(cd "$(dirname "$0")" && pwd)
git_dir=${VELA_WORKER_GIT:-}
if [ -z "$git_dir" ] || ! git --git-dir="$git_dir" rev-parse --verify --quiet "$RELEASE^{commit}" >/dev/null; then
	echo "SKIPPED: worker patch: no go-vela/worker mirror with $RELEASE (set VELA_WORKER_GIT to its git directory)"
	exit 0
fi
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git --git-dir="$git_dir" archive "$RELEASE" | tar -x -C "$tree"
cd "$tree"
git init -q
git apply --check -v "$here/image-check.patch"
git apply "$here/image-check.patch"
# The patched Go files still parse and are gofmt-clean (the worker's dependencies
# are not here, so `go build` cannot run).
unformatted=$(gofmt -l cmd executor)
if [ -n "$unformatted" ]; then
	echo "worker patch: not gofmt-clean after applying: $unformatted" >&2
	exit 1
fi
echo "worker patch: applies cleanly to go-vela/worker $RELEASE ($(git --git-dir="$git_dir" rev-parse "$RELEASE^{commit}"))"
