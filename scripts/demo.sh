#!/usr/bin/env bash
# The main job on real input: starts a local registry (Debian's docker-registry, with
# token auth and a token server), pushes sample images, and runs `pullcheck check` on
# examples/demo/.vela.yml, which has one typo in a tag and one missing repository.
# pullcheck exits 1 here, as it should; the script then exits 0 (and 1 if pullcheck did not).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --quiet -p pullcheck-cli -p pullcheck-testkit
bin="${CARGO_TARGET_DIR:-target}/debug"

work=$(mktemp -d)
registry_pid=""
cleanup() {
  [ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/pullcheck-testkit" serve --mode token --user demo:demo-password:'*' \
  --push library/golang:1.22,oci-index \
  --push library/postgres:16,docker-list \
  --push library/alpine:3.19,docker \
  --push library/alpine:3.20,oci \
  --push vela/vault:1.4,oci \
  --env-file "$work/registry.env" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 300); do
  [ -f "$work/registry.env" ] && break
  kill -0 "$registry_pid" 2>/dev/null || { cat "$work/registry.log" >&2; exit 2; }
  sleep 0.1
done
[ -f "$work/registry.env" ] || { echo "registry did not start" >&2; cat "$work/registry.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$work/registry.env"

# The credentials, as `docker login` would store them.
mkdir -p "$work/docker"
auth=$(printf '%s:%s' "$PULLCHECK_REGISTRY_USER" "$PULLCHECK_REGISTRY_PASSWORD" | base64 -w0)
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$PULLCHECK_REGISTRY" "$auth" >"$work/docker/config.json"

sed "s|REGISTRY|$PULLCHECK_REGISTRY|g" examples/demo/.vela.yml >"$work/.vela.yml"
# The header names the file the rows name: the copy with the registry filled in.
echo "registry: $PULLCHECK_REGISTRY (token auth)"
echo "pipeline: $work/.vela.yml (examples/demo/.vela.yml with REGISTRY replaced)"
echo
set +e
"$bin/pullcheck" check "$work/.vela.yml" --docker-config "$work/docker" "$@"
code=$?
set -e
echo
if [ "$code" -eq 1 ]; then
  echo "pullcheck exited with 1 (an image failed): the demo pipeline has a typo in a tag and a missing repository on purpose."
  exit 0
fi
echo "pullcheck exited with $code; the demo expected 1" >&2
exit 1
