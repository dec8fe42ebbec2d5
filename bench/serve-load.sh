#!/usr/bin/env bash
# A bounded load run of `pullcheck serve` (not a timed test): TOTAL checks (default
# 2000) of a 10-image pipeline, CONCURRENCY (default 64) at a time, against the
# testkit's token registry (Debian's docker-registry on loopback, token auth). Prints a
# Markdown table for docs/benchmarks.md: errors, p50/p99 latency, throughput, the
# service's peak RSS (VmHWM), a warm single check against the CLI's cold run of the same
# pipeline, and the registry requests of a warm check.
#
#   bench/serve-load.sh            builds the release binaries first
#   bench/serve-load.sh --no-build uses those in target/release
set -euo pipefail
cd "$(dirname "$0")/.."
total=${TOTAL:-2000}
conc=${CONCURRENCY:-64}
if [ "${1:-}" != "--no-build" ]; then
  cargo build --release -p pullcheck-cli -p pullcheck-testkit -p pullcheck-server --bins --examples >&2
fi
bin=target/release
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

"$bin/pullcheck-testkit" serve --mode token --push-many 10:team/app \
  --env-file "$work/registry.env" --images-file "$work/images" \
  --access-log "$work/access.log" --token-log "$work/token.log" >&2 &
pids+=($!)
until [ -f "$work/registry.env" ]; do sleep 0.1; done
# shellcheck disable=SC1091
. "$work/registry.env"

mkdir -p "$work/docker"
auth=$(printf '%s:%s' "$PULLCHECK_REGISTRY_USER" "$PULLCHECK_REGISTRY_PASSWORD" | base64 -w0)
printf '{"auths":{"%s":{"auth":"%s"}}}' "$PULLCHECK_REGISTRY" "$auth" > "$work/docker/config.json"
{
  echo 'version: "1"'
  echo 'steps:'
  i=0
  while read -r ref _; do
    echo "  - name: s$i"
    echo "    image: $ref"
    echo "    commands: [make]"
    i=$((i + 1))
  done < "$work/images"
} > "$work/.vela.yml"
python3 -c 'import json,sys; print(json.dumps({"pipeline": open(sys.argv[1]).read(), "file_name": ".vela.yml"}))' \
  "$work/.vela.yml" > "$work/body.json"
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$work/tokens"
token=$(cat "$work/tokens")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"

"$bin/pullcheck" serve --listen "127.0.0.1:$port" --api-token-file "$work/tokens" \
  --docker-config "$work/docker" --max-checks "$conc" 2> "$work/serve.log" &
serve_pid=$!
pids+=($serve_pid)
until curl -sf "$url/healthz" > /dev/null; do sleep 0.1; done

median_ms() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
post() {
  curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data @"$work/body.json" "$url/v1/checks"
}
# Warm the service once, then the load run.
post > /dev/null
load=$("$bin/examples/load" "$url/v1/checks" "$work/body.json" "$total" "$conc" "$work/tokens")
rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$serve_pid/status")
# A warm check alone, and its registry requests.
: > "$work/access.log"
warm=$(for _ in $(seq 20); do post; done | awk '{print $1 * 1000}' | median_ms)
post > /dev/null
sleep 0.5
: > "$work/access.log"
: > "$work/token.log"
post > /dev/null
sleep 1
warm_requests=$(awk '{print $1}' "$work/access.log" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')
warm_requests="${warm_requests}$(wc -l < "$work/token.log") token requests"
# The CLI's cold run of the same pipeline.
cold=$(for _ in $(seq 20); do
  s=$(date +%s%N)
  "$bin/pullcheck" check "$work/.vela.yml" --docker-config "$work/docker" > /dev/null || true
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
done | awk '{print $1 / 1000}' | median_ms)

python3 - "$load" "$rss_kb" "$warm" "$cold" "$warm_requests" "$total" "$conc" <<'PY'
import json, sys
load = json.loads(sys.argv[1])
rss_mb = int(sys.argv[2]) / 1024
warm, cold = float(sys.argv[3]), float(sys.argv[4])
errors = load["total"] - load["exit_0"]
print(f"| checks | concurrency | errors | p50 | p99 | max | checks/s | peak RSS |")
print(f"|---|---|---|---|---|---|---|---|")
print(f"| {load['total']} | {load['concurrency']} | {errors} | {load['p50_ms']:.1f} ms | "
      f"{load['p99_ms']:.1f} ms | {load['max_ms']:.1f} ms | {load['checks_per_s']:.0f} | {rss_mb:.1f} MiB |")
print()
print(f"Warm check alone (median of 20, curl): {warm:.1f} ms; the CLI's cold run of the same "
      f"pipeline (median of 20): {cold:.1f} ms, {cold / warm:.1f}x. Registry requests of one "
      f"warm check: {sys.argv[5].rstrip(', ') or 'none logged'}.")
PY
