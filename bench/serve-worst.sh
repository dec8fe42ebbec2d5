#!/usr/bin/env bash
# The memory a single worst request may cost `pullcheck serve` at its default limits (a
# benchmark, not a timed test). For each case a fresh release `pullcheck serve` (with
# --admission over TLS) is started on loopback, its peak RSS (VmHWM, /proc/PID/status)
# read once it answers /healthz, then the request is sent once and VmHWM read again.
# The registry is the testkit's (Debian's docker-registry, anonymous, loopback) with
# 1,000 pushed images, so the allowed requests are real checks (1,000 HEADs).
#
# Cases (the largest the limits allow, and the largest refused ones):
#   checks: 1,000 present images; 1,000 images with 8 KiB references (8 MiB body);
#           a pipeline of 1,000 steps whose body is filled to 8 MiB with YAML nodes
#           (a step's `commands`, up to the reader's node cap); manifests of 1,000
#           containers filled the same way; a pipeline of 1,000 aliased steps used by
#           200 stages, and a List of one aliased 1,000-container Pod 200 times
#           (200,000 uses each: refused with 413 once read); one step and 8 MiB of
#           small YAML documents after it, and one Pod and 8 MiB of ConfigMaps (each a
#           warning, not a use);
#   admission: a Pod of 500 containers (--admission-max-containers) filled to 3 MiB
#           (--admission-max-body) with container args; the same with 600 containers
#           (allowed unchecked).
#
#   bench/serve-worst.sh            builds the release binaries first
#   bench/serve-worst.sh --no-build uses those in target/release (or $CARGO_TARGET_DIR)
# Prints a Markdown table (docs/benchmarks.md, "Worst requests").
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-build" ]; then
  cargo build --release -p pullcheck-cli -p pullcheck-testkit --bins >&2
fi
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

"$bin/pullcheck-testkit" serve --push-many 1000:bench/img \
  --env-file "$work/registry.env" --images-file "$work/images" >&2 &
pids+=($!)
for _ in $(seq 1200); do [ -f "$work/registry.env" ] && break; sleep 0.5; done
# shellcheck disable=SC1091
. "$work/registry.env"

sh deploy/admission/make-certs.sh "$work/certs" pullcheck-admission pullcheck > /dev/null 2>&1
svc=pullcheck-admission.pullcheck.svc

python3 - "$work" "$work/images" <<'EOF'
import json, sys
work, images_file = sys.argv[1], sys.argv[2]
refs = [line.split()[0] for line in open(images_file) if line.strip()]
assert len(refs) >= 1000, len(refs)
refs = refs[:1000]
MAX_BODY = 8 << 20
ADMISSION_MAX_BODY = 3 << 20

def write(name, body):
    text = json.dumps(body)
    open(f"{work}/{name}.json", "w").write(text)
    return len(text)

write("images", {"images": [{"reference": r} for r in refs]})
long_ref = lambda i: f"{refs[i].split(':')[0]}/{'x' * 8000}-{i}:v1"
write("images-long", {"images": [{"reference": long_ref(i)} for i in range(1000)]})

def filled(head, item, filler_key, indent, nodes_per_item):
    """`head`, then one YAML item per image (`item(i, ref)`), the last with a flow list
    under `filler_key` holding as many nodes as fit under the reader's cap (2,000,000)
    and within --max-body."""
    def text(n):
        lines = list(head)
        for i, r in enumerate(refs):
            lines += item(i, r)
        lines += [" " * indent + filler_key + ": [" + ",".join(["a"] * n) + "]"]
        return "\n".join(lines) + "\n"
    base = len(json.dumps({"x": text(0)}))
    return text(min(1_990_000 - nodes_per_item * len(refs), (MAX_BODY - base - 64) // 2))

write("pipeline-filled", {"pipeline": filled(
    ['version: "1"', "steps:"],
    # Every step has commands (Vela refuses a step with nothing to do); the last one's
    # are the filler.
    lambda i, r: [f"  - name: s{i}", f"    image: {r}"]
    + (["    commands: [make]"] if i < len(refs) - 1 else []),
    "commands", 4, 7)})
write("manifests-filled", {"manifests": filled(
    ["apiVersion: v1", "kind: Pod", "metadata: {name: p}", "spec:", "  containers:"],
    lambda i, r: [f"    - name: c{i}", f"      image: {r}"], "args", 6, 6)})

bomb = ['version: "1"', "stages:", "  s0:", "    steps: &steps"]
for i, r in enumerate(refs):
    bomb += [f"      - name: s{i}", f"        image: {r}", "        commands: [make]"]
for s in range(1, 200):
    bomb += [f"  s{s}:", "    steps: *steps"]
write("pipeline-aliases", {"pipeline": "\n".join(bomb) + "\n"})
containers = ", ".join(f"{{name: c{i}, image: \"{r}\"}}" for i, r in enumerate(refs))
items = [f"  - &pod {{apiVersion: v1, kind: Pod, metadata: {{name: p}}, spec: {{containers: [{containers}]}}}}"]
items += ["  - *pod"] * 199
write("manifests-aliases", {"manifests": "apiVersion: v1\nkind: List\nitems:\n" + "\n".join(items) + "\n"})

# Many small documents after the first: each is a warning, not a use.
one_step = f'version: "1"\nsteps:\n  - name: s\n    image: {refs[0]}\n    commands: [make]\n'
n = (MAX_BODY - 200) // len("---\\na\\n")
write("pipeline-documents", {"pipeline": one_step + "---\na\n" * n})
pod1 = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, image: \"{refs[0]}\"}}]}}\n"
n = (MAX_BODY - 400) // len("---\\nkind: ConfigMap\\n")
write("manifests-skipped", {"manifests": pod1 + "---\nkind: ConfigMap\n" * n})

def review(n, uid):
    containers = [{"name": f"c{i}", "image": refs[i % len(refs)], "imagePullPolicy": "IfNotPresent"}
                  for i in range(n)]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "worst", "namespace": "ci"},
           "spec": {"containers": containers}}
    def body():
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                            "resource": {"group": "", "version": "v1", "resource": "pods"},
                            "namespace": "ci", "operation": "CREATE", "object": pod}}
    room = ADMISSION_MAX_BODY - len(json.dumps(body())) - 64
    containers[0]["args"] = ["a"] * (room // 5)
    return body()
write("admission-500", review(500, "00000000-0000-4000-8000-000000000500"))
write("admission-600", review(600, "00000000-0000-4000-8000-000000000600"))
EOF

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
hwm() { awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$1/status"; }

# One case: a fresh service, VmHWM before and after one request.
run() {
  local name=$1 route=$2
  "$bin/pullcheck" serve --listen "127.0.0.1:$port" --admission \
    --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" \
    2> "$work/serve-$name.log" &
  local pid=$!
  pids+=($pid)
  local curl=(curl -s --cacert "$work/certs/ca.crt" --resolve "$svc:$port:127.0.0.1")
  until "${curl[@]}" -f "https://$svc:$port/healthz" > /dev/null; do sleep 0.1; done
  local before
  before=$(hwm "$pid")
  local out status
  out=$("${curl[@]}" -o "$work/answer-$name.json" -w '%{http_code} %{time_total} %{size_download}' \
    -H 'Content-Type: application/json' --data-binary @"$work/$name.json" "https://$svc:$port$route")
  read -r status secs size <<< "$out"
  local after
  after=$(hwm "$pid")
  local body_kib=$(( $(stat -c %s "$work/$name.json") / 1024 ))
  local what
  what=$(python3 - "$work/answer-$name.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
if "summary" in a:
    s = a["summary"]; print(f"{s['total']} images, {s.get('present', 0)} present")
elif "response" in a:
    r = a["response"]; print(("allowed" if r["allowed"] else "denied") + f", {len(r.get('warnings', []))} warnings")
else:
    e = a["error"]; print(f"{e.get('flag', '')} {e.get('count', '')}".strip() or e["message"][:40])
EOF
)
  printf '| %s | %s | %s KiB | %s (%s) | %s KiB | %.2f s | %s MiB | %s MiB | **%s MiB** |\n' \
    "$name" "$route" "$body_kib" "$status" "$what" "$(( size / 1024 ))" "$secs" \
    "$before" "$after" "$(( after - before ))"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "| case | route | body | answer | answer size | time | VmHWM at start | VmHWM after | cost |"
echo "|---|---|---|---|---|---|---|---|---|"
run images /v1/checks
run images-long /v1/checks
run pipeline-filled /v1/checks
run manifests-filled /v1/checks
run pipeline-aliases /v1/checks
run manifests-aliases /v1/checks
run pipeline-documents /v1/checks
run manifests-skipped /v1/checks
run admission-500 /v1/admission
run admission-600 /v1/admission
