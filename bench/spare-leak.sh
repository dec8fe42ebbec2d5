#!/usr/bin/env bash
# The spare connection in `pullcheck serve` and with plain mirrors (bench/README.md;
# issue 27, rev27 item 4): not a timed run, counts only. Run it inside a loopback-only
# network namespace (unshare -rn sh -c 'ip link set lo up; ...') with the release
# binaries in target/release.
#
#   bench/spare-leak.sh [CHECKS]     (default 400 checks)
#
# 1. `pullcheck serve` against an anonymous plain-HTTP registry and an anonymous TLS one
#    (each behind the testkit's counting proxy, 1 ms each way): CHECKS checks of a
#    10-image pipeline posted 8 at a time, then the service's open file descriptors
#    (/proc/PID/fd) and TCP connections (ss) after the first check, after the load, and
#    after 2 s of quiet, with the proxies' counts (connections accepted, silent, open).
# 2. `pullcheck check` through a containerd hosts.toml mirror `http://` (plain only: no
#    spare) and a registries.conf mirror with `insecure = true` (both schemes: a
#    spare), the proxies' counts of each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
checks=${1:-400}
bin=$root/target/release
out=$root/target/bench/spare-leak
rm -rf "$out"; mkdir -p "$out/docker" "$out/certs"
echo '{}' > "$out/docker/config.json"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
"$root/bench/wan-certs.sh" "$out/certs" >/dev/null
start_registry() { # name, extra args...
  local name=$1; shift
  "$bin/pullcheck-testkit" serve --mode anonymous --push-many 10 --latency-ms 1 \
    --proxy-stats "$out/$name.stats" --env-file "$out/$name.env" \
    --images-file "$out/$name.images" "$@" >"$out/$name.log" 2>&1 &
  pids+=($!)
  until [ -f "$out/$name.env" ]; do sleep 0.1; done
}
start_registry plain
start_registry tls --tls "$out/certs/server.pem,$out/certs/server.key,$out/certs/ca.pem"
pipeline() { # images file -> body.json
  python3 - "$1" <<'PY'
import json, sys
steps = "".join(f"  - name: s{i}\n    image: {line.split()[0]}\n    commands: [make]\n"
                for i, line in enumerate(open(sys.argv[1])) if line.strip())
print(json.dumps({"pipeline": 'version: "1"\nsteps:\n' + steps, "file_name": ".vela.yml"}))
PY
}
pipeline "$out/plain.images" > "$out/plain.json"
pipeline "$out/tls.images" > "$out/tls.json"
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$out/tokens"
token=$(cat "$out/tokens")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$bin/pullcheck" serve --listen "127.0.0.1:$port" --api-token-file "$out/tokens" \
  --docker-config "$out/docker" --ca-file "$out/certs/ca.pem" 2> "$out/serve.log" &
serve=$!
pids+=($serve)
until curl -sf "$url/healthz" > /dev/null; do sleep 0.1; done
post() { curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' --data @"$1" "$url/v1/checks"; }
counts() { # label
  local fds tcp
  fds=$(ls "/proc/$serve/fd" | wc -l)
  tcp=$(ss -tnpH state established 2>/dev/null | grep -c "pid=$serve," || true)
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$fds" "$tcp" "$(cat "$out/plain.stats" 2>/dev/null | tr '\n' ' ')" "$(cat "$out/tls.stats" 2>/dev/null | tr '\n' ' ')"
}
echo "| when | serve fds | serve TCP established | plain registry proxy | TLS registry proxy |"
echo "|---|---|---|---|---|"
post "$out/plain.json" >/dev/null; post "$out/tls.json" >/dev/null
sleep 1
counts "after one check of each"
codes=$(for i in $(seq "$checks"); do if [ $((i % 2)) -eq 0 ]; then echo "$out/plain.json"; else echo "$out/tls.json"; fi; done |
  xargs -P 8 -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data @{} "$url/v1/checks" | sort | uniq -c | tr '\n' ' ')
counts "after $checks more (HTTP codes: $codes)"
sleep 2
counts "after 2 s quiet"

# Mirrors, with the CLI: docker.io/bench/img-0:v1 through a mirror on the plain registry.
. "$out/plain.env"
mirror=$PULLCHECK_REGISTRY
mkdir -p "$out/hosts/docker.io"
printf 'server = "https://registry-1.docker.io"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$mirror" > "$out/hosts/docker.io/hosts.toml"
printf '[[registry]]\nprefix = "docker.io"\nlocation = "docker.io"\n[[registry.mirror]]\nlocation = "%s"\ninsecure = true\n' "$mirror" > "$out/registries.conf"
refs=$(awk '{print $1}' "$out/plain.images" | sed "s#^$mirror/#docker.io/#" | head -5 | sed 's/^/--image /' | tr '\n' ' ')
for form in hosts registries; do
  before=$(tr '\n' ' ' < "$out/plain.stats")
  case $form in
    hosts) args=(--node-config containerd --hosts-dir "$out/hosts") ;;
    registries) args=(--node-config crio --registries-conf "$out/registries.conf") ;;
  esac
  # shellcheck disable=SC2086
  "$bin/pullcheck" check --docker-config "$out/docker" "${args[@]}" $refs --format json > "$out/$form.json" 2>"$out/$form.err" || true
  sleep 1
  printf '%s mirror: %s; proxy before: %s; after: %s\n' "$form" \
    "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([i["status"] for i in r["images"]])' "$out/$form.json" 2>/dev/null || echo "see $out/$form.err")" \
    "$before" "$(tr '\n' ' ' < "$out/plain.stats")"
done
