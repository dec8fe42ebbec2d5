#!/usr/bin/env bash
# pullcheck's benchmark: pullcheck against what users would otherwise script
# (skopeo, the docker CLI) and against the protocol floor, on real registries
# (Debian's docker-registry on loopback, token auth and no auth). See
# bench/README.md.
#
#   bench/run.sh            N = 10, 100, 1000; writes docs/benchmarks.{md,png}
#   bench/run.sh --quick    N = 10, 100; writes only the results directory
#   bench/run.sh --wan      across a simulated network (bench/wan.sh): TLS and plain,
#                           0, 20 and 50 ms round trips, a concurrency sweep; writes
#                           the WAN section of docs/benchmarks.md (about 40 minutes)
set -euo pipefail
for arg in "$@"; do
  [ "$arg" = --wan ] && exec "$(dirname "$0")/wan.sh" "$@"
done

usage() {
  cat <<'EOF'
usage: bench/run.sh [--quick] [--runs R] [--seq-max M] [--out DIR] [--no-docs] [--no-build]

  --quick       N = 10 and 100 only (a few minutes); does not touch docs/
  --runs R      hyperfine runs of each command (default 5, at least 5); at
                N <= 100, pullcheck and the curl floor get max(R, 20)
  --seq-max M   the sequential peers (skopeo-seq, docker-seq) are timed over at
                most M images (default 200); above that, their time is scaled
                to N and marked "est." (default: 200; 0 = never cap)
  --out DIR     results directory (default target/bench/results)
  --no-docs     do not write docs/benchmarks.md and docs/benchmarks.png
  --no-build    use the pullcheck and pullcheck-testkit already in target/release
  --wan         the benchmark across a simulated network instead (bench/wan.sh
                --help lists its options and defaults)
EOF
}

quick=0
runs=5
seq_max=200
out=""
docs=1
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --runs) runs=${2:?--runs needs a value}; shift ;;
    --seq-max) seq_max=${2:?--seq-max needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    --no-docs) docs=0 ;;
    --no-build) build=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench/run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ "$runs" -ge 5 ] 2>/dev/null || { echo "--runs must be a number >= 5" >&2; exit 2; }
[ "$seq_max" -ge 0 ] 2>/dev/null || { echo "--seq-max must be a number" >&2; exit 2; }
if [ "$quick" -eq 1 ]; then
  sizes=(10 100)
  docs=0
else
  sizes=(10 100 1000)
fi
fast_runs=$((runs > 20 ? runs : 20))

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${out:-$root/target/bench/results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
started_at=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------- packages
log "packages"
scripts/install-deps.sh
need=()
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
[ -x /usr/bin/time ] || need+=(time)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v uptime >/dev/null 2>&1 || need+=(procps)
# The docker CLI: Debian ships it in docker.io (with the daemon, which the
# benchmark never uses).
command -v docker >/dev/null 2>&1 || need+=(docker.io)
if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "bench/run.sh: cargo not found; install Rust (rustup or Debian's cargo) first" >&2
  exit 2
fi

# ---------------------------------------------------------------- build
log "build (release)"
if [ "$build" -eq 1 ]; then
  cargo build --release --quiet -p pullcheck-cli -p pullcheck-testkit
fi
pullcheck=$root/target/release/pullcheck
testkit=$root/target/release/pullcheck-testkit
for bin in "$pullcheck" "$testkit"; do
  [ -x "$bin" ] || { echo "bench/run.sh: $bin is missing (drop --no-build)" >&2; exit 2; }
done
# The chart and table maker: its own package (not a workspace member).
CARGO_TARGET_DIR=$root/target/bench-plot cargo build --release --quiet --manifest-path bench/plot/Cargo.toml
report=$root/target/bench-plot/release/pullcheck-bench-report

# ---------------------------------------------------------------- results dir
rm -rf "$out/hyperfine" "$out/work"
mkdir -p "$out/hyperfine" "$out/work"
work=$out/work
: >"$out/requests.tsv"
: >"$out/rss.tsv"
: >"$out/timings.tsv"
printf 'mode\tn\ttool\timages\tregistry_requests\ttoken_requests\tby_method\n' >"$out/requests.tsv"
printf 'mode\tn\tform\trun\tmax_rss_kib\n' >"$out/rss.tsv"
printf 'mode\tn\ttool\timages\tjson\n' >"$out/timings.tsv"

pids=()
cleanup() {
  local pid
  stop_registry
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -f "$out/.cpu-state"
}
trap cleanup EXIT

# Load, sampled every 5 s while the benchmark runs: the load averages (which
# count the benchmark's own processes too), the CPU time that processes outside
# this benchmark used since the previous sample (in clock ticks, from
# /proc/PID/stat; a process that starts and ends between two samples is missed),
# and the machine's cumulative CPU time and steal time (from /proc/stat).
bench_pid=$$
other_cpu_ticks() { # state file -> prints ticks used by others since the last call
  # Through cat: a process may end between the glob and the read.
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v me="$bench_pid" -v state="$1" '
    {
      line = $0
      pid = substr(line, 1, index(line, " ") - 1)
      rest = substr(line, match(line, /\) [A-Za-z] /) + 2)
      split(rest, f, " ")
      ppid[pid] = f[2]; ticks[pid] = f[12] + f[13]
    }
    END {
      while ((getline l < state) > 0) { split(l, g, " "); before[g[1]] = g[2] }
      printf "" > state
      for (p in ticks) {
        q = p; mine = 0
        for (d = 0; d < 64 && q > 1; d++) { if (q == me) { mine = 1; break } q = ppid[q] }
        if (mine) continue
        print p, ticks[p] > state
        used += ticks[p] - ((p in before) ? before[p] : ticks[p])
      }
      print used + 0
    }'
}
cpu_line() { # cumulative jiffies of all CPUs: total and steal (taken by the hypervisor)
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9; exit }' /proc/stat
}
(
  # A failed sample must not end the sampler.
  set +e +o pipefail
  state=$out/.cpu-state
  other_cpu_ticks "$state" >/dev/null
  while :; do
    sleep 5
    printf '%s %s %s %s\n' "$(date +%s)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
      "$(other_cpu_ticks "$state")" "$(cpu_line)"
  done
) >"$out/load.txt" &
pids+=($!)

# ---------------------------------------------------------------- registries
# A fresh registry for each mode and N, holding N distinct images, stopped
# before the next one starts: the testkit keeps every token request in memory,
# so one registry for every N would grow its bookkeeping run after run.
registry_pid=""
start_registry() { # MODE N
  local mode=$1 n=$2 dir=$work/$1-$2
  mkdir -p "$dir"
  local args=(serve --mode "$mode" --push-many "$n" --env-file "$dir/registry.env"
    --images-file "$dir/images" --access-log "$dir/access.log")
  [ "$mode" = token ] && args+=(--token-log "$dir/token.log")
  "$testkit" "${args[@]}" >"$dir/serve.log" 2>&1 &
  registry_pid=$!
  for _ in $(seq 1 3000); do
    [ -f "$dir/registry.env" ] && break
    kill -0 "$registry_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -f "$dir/registry.env" ]; then
    echo "bench/run.sh: the $mode registry did not start:" >&2
    cat "$dir/serve.log" >&2
    exit 1
  fi
  echo "  $(grep -E '^pushed' "$dir/serve.log" || echo "pushed $n images") ($mode)"
}

stop_registry() {
  if [ -n "$registry_pid" ]; then
    kill "$registry_pid" 2>/dev/null || true
    wait "$registry_pid" 2>/dev/null || true
    registry_pid=""
  fi
}

# ---------------------------------------------------------------- request counting
# The testkit appends to the access and token logs asynchronously. A marker
# request after each counted run, waited for in both logs, closes the window.
marker=0
close_window() { # MODE -> sets win_registry win_token win_methods
  local mode=$1 dir=$win_dir
  marker=$((marker + 1))
  local tag="bench-marker/$marker"
  curl -s -o /dev/null "$reg_url/v2/$tag/tags/list" || true
  if [ "$mode" = token ]; then
    curl -s -o /dev/null "$token_realm?service=bench-marker&scope=repository:$tag:pull" || true
  fi
  local i seen=0
  for i in $(seq 1 1000); do
    if grep -q " /v2/$tag/tags/list " "$dir/access.log" &&
      { [ "$mode" != token ] || grep -q "\"repository:$tag:pull\"" "$dir/token.log"; }; then
      seen=1
      break
    fi
    sleep 0.02
  done
  if [ "$seen" -ne 1 ]; then
    echo "bench/run.sh: marker $tag did not reach the $mode registry's logs in 20 s" >&2
    exit 1
  fi
  # Lines between the previous marker and this one.
  win_registry=$(awk -v m="$tag" -v p="bench-marker/$((marker - 1))/" '
    index($0, m "/") { exit } started && !index($0, "bench-marker/") { n++ }
    index($0, p) { started = 1 } END { print n + 0 }' "$dir/access.log")
  win_methods=$(awk -v m="$tag" -v p="bench-marker/$((marker - 1))/" '
    index($0, m "/") { exit } started && !index($0, "bench-marker/") { c[$1 " " $3]++ }
    index($0, p) { started = 1 } END { for (k in c) printf "%s%s:%d", (s++ ? "," : ""), k, c[k] }' "$dir/access.log" |
    tr ' ' '_')
  win_token=0
  if [ "$mode" = token ]; then
    win_token=$(awk -v m="repository:$tag:pull" -v p="repository:bench-marker/$((marker - 1)):pull" '
      index($0, m) { exit } started && !index($0, "bench-marker") { n++ }
      index($0, p) { started = 1 } END { print n + 0 }' "$dir/token.log")
  fi
}

# ---------------------------------------------------------------- one mode
timed() { # MODE N TOOL IMAGES RUNS WARMUP COMMAND...
  local mode=$1 n=$2 tool=$3 images=$4 r=$5 warmup=$6
  shift 6
  local json=$out/hyperfine/$mode-n$n-$tool.json
  hyperfine -N --style basic --runs "$r" --warmup "$warmup" \
    --command-name "$tool ($mode, N=$n, $images images)" \
    --export-json "$json" "$(printf '%q ' "$@")" >>"$out/hyperfine.log" 2>&1 || {
    echo "bench/run.sh: hyperfine failed for $tool ($mode, N=$n); see $out/hyperfine.log" >&2
    tail -20 "$out/hyperfine.log" >&2
    exit 1
  }
  printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$tool" "$images" "hyperfine/$(basename "$json")" >>"$out/timings.tsv"
  # Median, for the console.
  local med
  med=$(tr -d ' \n' <"$json" | sed -n 's/.*"median":\([0-9.e-]*\).*/\1/p')
  printf '  %-12s %-9s N=%-5s images=%-5s median %8.3f s\n' "$tool" "$mode" "$n" "$images" "$med"
}

counted() { # MODE N TOOL IMAGES COMMAND... : one run, its requests counted
  local mode=$1 n=$2 tool=$3 images=$4
  shift 4
  close_window "$mode"
  local rc=0
  "$@" >"$work/last.out" 2>"$work/last.err" || rc=$?
  close_window "$mode"
  if [ "$rc" -ne 0 ]; then
    echo "bench/run.sh: $tool failed ($mode, N=$n, exit $rc):" >&2
    tail -20 "$work/last.err" >&2
    exit 1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$tool" "$images" "$win_registry" "$win_token" "$win_methods" >>"$out/requests.tsv"
}

run_one() { # MODE N
  local mode=$1 n=$2 dir=$work/$1-$2
  log "$mode, N=$n"
  start_registry "$mode" "$n"
  # shellcheck disable=SC1091
  . "$dir/registry.env"
  reg_url=$PULLCHECK_REGISTRY_URL
  token_realm=${PULLCHECK_TOKEN_REALM:-}
  win_dir=$dir
  export BENCH_REGISTRY_URL=$reg_url
  export DOCKER_CONFIG=$dir/docker
  mkdir -p "$DOCKER_CONFIG"
  if [ "$mode" = token ]; then
    export BENCH_USER=$PULLCHECK_REGISTRY_USER BENCH_PASSWORD=$PULLCHECK_REGISTRY_PASSWORD
    local auth
    auth=$(printf '%s:%s' "$BENCH_USER" "$BENCH_PASSWORD" | base64 -w0)
    printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$PULLCHECK_REGISTRY" "$auth" >"$DOCKER_CONFIG/config.json"
  else
    unset BENCH_USER BENCH_PASSWORD
    printf '{"auths":{}}\n' >"$DOCKER_CONFIG/config.json"
  fi

  local refs=$dir/refs vela=$dir/pipeline/.vela.yml
  cut -d' ' -f1 "$dir/images" >"$refs"
  [ "$(wc -l <"$refs")" -eq "$n" ] || { echo "bench/run.sh: expected $n images in $dir/images" >&2; exit 1; }
  mkdir -p "$(dirname "$vela")"
  {
    echo 'version: "1"'
    echo 'steps:'
    awk '{ printf "  - name: step-%d\n    image: %s\n    pull: always\n    commands: [\"true\"]\n", NR - 1, $1 }' "$refs"
  } >"$vela"
  local image_args=() ref
  while read -r ref; do image_args+=(--image "$ref"); done <"$refs"
  local seq_n=$n seq_refs=$refs
  if [ "$seq_max" -gt 0 ] && [ "$n" -gt "$seq_max" ]; then
    seq_n=$seq_max
    seq_refs=$dir/refs-first-$seq_max
    head -n "$seq_max" "$refs" >"$seq_refs"
  fi
  # The fast commands get more runs where a run is short.
  local fr=$runs fw=0
  if [ "$n" -le 100 ]; then
    fr=$fast_runs fw=2
  fi
  local pc_vela=("$pullcheck" check --docker-config "$DOCKER_CONFIG" "$vela")
  local pc_args=("$pullcheck" check --docker-config "$DOCKER_CONFIG" "${image_args[@]}")

  close_window "$mode"
  # Each tool: one counted run (which is also the warm-up), then hyperfine.
  counted "$mode" "$n" skopeo-seq "$seq_n" bench/peer.sh skopeo-seq "$seq_refs"
  timed "$mode" "$n" skopeo-seq "$seq_n" "$runs" 0 bench/peer.sh skopeo-seq "$seq_refs"
  counted "$mode" "$n" skopeo-par8 "$n" bench/peer.sh skopeo-par8 "$refs"
  timed "$mode" "$n" skopeo-par8 "$n" "$runs" 0 bench/peer.sh skopeo-par8 "$refs"
  counted "$mode" "$n" docker-seq "$seq_n" bench/peer.sh docker-seq "$seq_refs"
  timed "$mode" "$n" docker-seq "$seq_n" "$runs" 0 bench/peer.sh docker-seq "$seq_refs"
  counted "$mode" "$n" curl-floor "$n" bench/peer.sh curl-floor "$refs"
  timed "$mode" "$n" curl-floor "$n" "$fr" "$fw" bench/peer.sh curl-floor "$refs"
  counted "$mode" "$n" pullcheck-vela "$n" "${pc_vela[@]}" --format json
  tr -d ' \n' <"$work/last.out" | grep -q "\"present\":${n}[,}]" || {
    echo "bench/run.sh: pullcheck did not find all $n images present:" >&2
    tail -c 2000 "$work/last.out" >&2
    exit 1
  }
  timed "$mode" "$n" pullcheck-vela "$n" "$fr" "$fw" "${pc_vela[@]}"
  counted "$mode" "$n" pullcheck-args "$n" "${pc_args[@]}"
  timed "$mode" "$n" pullcheck-args "$n" "$fr" "$fw" "${pc_args[@]}"

  # Peak RSS of pullcheck, both input forms, 3 runs each.
  local form i rss
  for form in vela args; do
    for i in 1 2 3; do
      if [ "$form" = vela ]; then
        /usr/bin/time -v -o "$work/time.txt" "${pc_vela[@]}" >/dev/null
      else
        /usr/bin/time -v -o "$work/time.txt" "${pc_args[@]}" >/dev/null
      fi
      rss=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$work/time.txt")
      printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$form" "$i" "$rss" >>"$out/rss.tsv"
    done
  done
  stop_registry
}

log "start-up: pullcheck --version"
hyperfine -N --style basic --warmup 10 --runs 100 --command-name "pullcheck --version" \
  --export-json "$out/hyperfine/startup.json" "$pullcheck --version" >>"$out/hyperfine.log" 2>&1
printf '  median %.2f ms\n' "$(tr -d ' \n' <"$out/hyperfine/startup.json" | sed -n 's/.*"median":\([0-9.e-]*\).*/\1/p' | awk '{ print $1 * 1000 }')"

for mode in token anonymous; do
  for n in "${sizes[@]}"; do
    run_one "$mode" "$n"
  done
done

# ---------------------------------------------------------------- machine and report
finished_at=$(date +%s)
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
cpu_family=$(sed -n 's/^cpu family[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
cpu_model=$(sed -n 's/^model[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu_family" ] && cpu="${cpu:-unknown} (family $cpu_family, model $cpu_model)"
{
  printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf 'duration_s\t%s\n' "$((finished_at - started_at))"
  printf 'load_before\t%s\n' "$load_before"
  printf 'clk_tck\t%s\n' "$(getconf CLK_TCK)"
  printf 'nproc\t%s\n' "$(nproc)"
  printf 'cpu\t%s\n' "${cpu:-unknown}"
  printf 'kernel\t%s\n' "$(uname -sr)"
  # shellcheck disable=SC1091
  printf 'os\t%s\n' "$(. /etc/os-release && echo "$PRETTY_NAME")"
  printf 'memory\t%s\n' "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  printf 'sizes\t%s\n' "${sizes[*]}"
  printf 'runs\t%s\n' "$runs"
  printf 'fast_runs\t%s\n' "$fast_runs"
  printf 'seq_max\t%s\n' "$seq_max"
  printf 'quick\t%s\n' "$quick"
  printf 'pullcheck\t%s\n' "$("$pullcheck" --version)"
  printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null || echo ' (with uncommitted changes)')"
  printf 'skopeo\t%s\n' "$(skopeo --version)"
  printf 'docker\t%s\n' "$(docker --version)"
  printf 'registry\t%s\n' "$(docker-registry --version)"
  printf 'hyperfine\t%s\n' "$(hyperfine --version)"
  printf 'curl\t%s\n' "$(curl --version | head -n 1 | cut -d' ' -f1-2)"
  printf 'rustc\t%s\n' "$(rustc --version)"
} >"$out/machine.tsv"

report_args=(--results "$out" --markdown "$out/benchmarks.md" --png "$out/benchmarks.png")
# The notes analyse the published full run; a quick run's report goes without them.
[ "$docs" -eq 1 ] && [ -f bench/notes.md ] && report_args+=(--notes bench/notes.md)
"$report" "${report_args[@]}"
if [ "$docs" -eq 1 ]; then
  mkdir -p docs
  cp "$out/benchmarks.md" docs/benchmarks.md
  cp "$out/benchmarks.png" docs/benchmarks.png
  # The WAN section (bench/run.sh --wan) stays first.
  python3 bench/wan-report.py --resplice docs/benchmarks.md
  echo
  echo "wrote docs/benchmarks.md and docs/benchmarks.png"
fi
echo "results: $out (benchmarks.md, benchmarks.png, hyperfine/*.json)"
