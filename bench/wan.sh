#!/usr/bin/env bash
# pullcheck's benchmark across a simulated network (bench/run.sh --wan): the registry
# and its token server behind the testkit's latency proxy (a fixed one-way delay each
# way; connections counted), over TLS with a CA made here, and over plain HTTP; token
# auth. See bench/README.md ("Across a network").
#
#   bench/wan.sh [--rtts "0 20 50"] [--sizes "10 50 100 1000"] [--transports "tls plain"]
#                [--runs R] [--peer-runs R] [--seq-max M] [--par-max M]
#                [--sweep "16 32 64 100"] [--sweep-sizes "100 1000"] [--sweep-runs R]
#                [--peers "skopeo-par8 skopeo-seq docker-seq"] [--no-install]
#                [--out DIR] [--no-build] [--no-docs]
#
# --peers: the peers to time (default all three; "" none). --no-install: no apt-get;
# where hyperfine is missing, bench/timer.py times the runs instead (machine.tsv says
# which timer ran).
#
# RTT 0 runs everything through the proxies without delay: what the same commands cost
# without a network (the registry's CPU above all), to read the other rows against.
# --sweep: `pullcheck check --concurrency C` for each C, at each RTT but 0, for the
# N in --sweep-sizes (the data behind the default concurrency).
set -euo pipefail

rtts="0 20 50"
sizes="10 50 100 1000"
transports="tls plain"
runs=10
peer_runs=3
seq_max=10
par_max=100
sweep="16 32 64 100"
sweep_sizes="100 1000"
sweep_runs=5
out=""
build=1
docs=1
peers="skopeo-par8 skopeo-seq docker-seq"
install=1
fail() { echo "bench/wan.sh: $*" >&2; exit 2; }
# The value of option $1, which must be there and not empty.
value() { [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value"; printf '%s' "$2"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rtts | --sizes | --transports | --runs | --peer-runs | --seq-max | --par-max | \
      --sweep-runs | --out)
      v=$(value "$@") || exit 2
      case "$1" in
        --rtts) rtts=$v ;; --sizes) sizes=$v ;; --transports) transports=$v ;;
        --runs) runs=$v ;; --peer-runs) peer_runs=$v ;; --seq-max) seq_max=$v ;;
        --par-max) par_max=$v ;; --sweep-runs) sweep_runs=$v ;; --out) out=$v ;;
      esac
      shift ;;
    # May be empty: no sweep.
    --sweep) [ $# -ge 2 ] || fail "--sweep needs a value"; sweep=$2; shift ;;
    --sweep-sizes) [ $# -ge 2 ] || fail "--sweep-sizes needs a value"; sweep_sizes=$2; shift ;;
    --peers) [ $# -ge 2 ] || fail "--peers needs a value"; peers=$2; shift ;;
    --no-install) install=0 ;;
    --no-build) build=0 ;;
    --no-docs) docs=0 ;;
    --wan) ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) fail "unknown option $1" ;;
  esac
  shift
done
# A whole number without leading zeros (bash would read 08 as octal).
number() { [[ $1 =~ ^(0|[1-9][0-9]{0,6})$ ]]; }
number "$runs" && [ "$runs" -ge 3 ] || fail "--runs must be a number >= 3, not '$runs'"
for v in "$peer_runs" "$sweep_runs"; do
  number "$v" && [ "$v" -ge 2 ] || fail "--peer-runs and --sweep-runs must be numbers >= 2, not '$v'"
done
for v in "$seq_max" "$par_max"; do
  number "$v" || fail "--seq-max and --par-max must be numbers (0: all images), not '$v'"
done
[ -n "${rtts// /}" ] || fail "--rtts needs at least one round trip"
for v in $rtts; do
  number "$v" && [ $((v % 2)) -eq 0 ] || fail "--rtts: '$v' is not an even number of milliseconds"
done
[ -n "${sizes// /}" ] || fail "--sizes needs at least one N"
for v in $sizes $sweep_sizes $sweep; do
  number "$v" && [ "$v" -ge 1 ] || fail "--sizes, --sweep-sizes, --sweep: '$v' is not a positive number"
done
for v in $peers; do
  case "$v" in skopeo-par8 | skopeo-seq | docker-seq) ;; *) fail "--peers: '$v' is not skopeo-par8, skopeo-seq or docker-seq" ;; esac
done
[ -n "${transports// /}" ] || fail "--transports needs tls, plain or both"
for v in $transports; do
  case "$v" in tls | plain) ;; *) fail "--transports: '$v' is neither tls nor plain" ;; esac
done
# The results directory is emptied first: only one that is empty or holds an earlier
# run's results.
if [ -n "$out" ] && [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -f "$out/wan.tsv" ]; then
  fail "--out $out is neither empty nor an earlier run's results (no wan.tsv there); it is not emptied"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${out:-$root/target/bench/wan}
rm -rf "$out"
mkdir -p "$out/hyperfine" "$out/work"
out=$(cd "$out" && pwd)
work=$out/work
log() { printf '\n== %s\n' "$*"; }

log "packages and build"
[ "$install" -eq 1 ] && scripts/install-deps.sh
need=()
[[ " $peers " == *" skopeo-"* ]] && { command -v skopeo >/dev/null 2>&1 || need+=(skopeo); }
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
[[ " $peers " == *" docker-seq "* ]] && { command -v docker >/dev/null 2>&1 || need+=(docker.io); }
if [ "$install" -eq 1 ] && [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The timer: hyperfine, or with --no-install where it is missing, bench/timer.py.
timer_name=hyperfine
if command -v hyperfine >/dev/null 2>&1; then
  timer=(hyperfine)
  timer_name="hyperfine $(hyperfine --version | cut -d' ' -f2)"
elif [ "$install" -eq 0 ]; then
  timer=(python3 "$root/bench/timer.py")
  timer_name="bench/timer.py (hyperfine not installed)"
else
  timer=(hyperfine)
fi
tools=(curl openssl python3)
[[ " $peers " == *" skopeo-"* ]] && tools+=(skopeo)
[[ " $peers " == *" docker-seq "* ]] && tools+=(docker)
[ "${timer[0]}" = hyperfine ] && tools+=(hyperfine)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bench/wan.sh: $tool is missing (bench/run.sh installs it)" >&2; exit 2; }
done
if [ "$build" -eq 1 ]; then
  cargo build --release --quiet -p pullcheck-cli -p pullcheck-testkit
fi
pullcheck=$root/target/release/pullcheck
testkit=$root/target/release/pullcheck-testkit
# The default concurrency, as the binary states it (the floor and the targets use it).
concurrency=$("$pullcheck" check --help | awk '/--concurrency/ { f = 1 } f && /\[default: / { sub(/.*\[default: /, ""); sub(/\].*/, ""); print; exit }')
[ -n "$concurrency" ] || fail "cannot read the default --concurrency from pullcheck check --help"
bench/wan-certs.sh "$work/certs"
certs=$work/certs

pids=()
registry_pid=""
serve_pid=""
stop_pid() {
  if [ -n "$1" ]; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop_pid "$serve_pid"
  stop_pid "$registry_pid"
  for p in "${pids[@]}"; do stop_pid "$p"; done
}
trap cleanup EXIT

# The outside load, as bench/run.sh samples it: load averages every 5 s.
(while :; do printf '%s %s\n' "$(date +%s)" "$(cut -d' ' -f1-3 /proc/loadavg)"; sleep 5; done) >"$out/load.txt" 2>/dev/null &
pids+=($!)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

printf 'rtt_ms\ttransport\tn\ttool\timages\tmedian_s\tmin_s\tmax_s\tstddev_s\truns\tregistry_requests\ttoken_requests\tby_method\tregistry_connections\tregistry_tls_hellos\ttoken_connections\tregistry_cpu_ms\n' >"$out/wan.tsv"

stats() { # -> "registry_conns registry_tls token_conns"
  awk '$1 == "registry" { r = $2; t = $3 } $1 == "token" { k = $2 } END { print r + 0, t + 0, k + 0 }' "$dir/stats"
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# "median min max stddev runs" (seconds) of a hyperfine JSON export.
hyperfine_stats() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["median"], r["min"], r["max"], r["stddev"] or 0, len(r["times"]))' "$1"
}
# The first MAX images of $dir/refs (all when MAX is 0 or N is smaller): "COUNT FILE".
first_images() { # MAX NAME
  if [ "$1" -gt 0 ] && [ "$n" -gt "$1" ]; then
    head -n "$1" "$dir/refs" >"$dir/refs-$2"
    echo "$1 $dir/refs-$2"
  else
    echo "$n $dir/refs"
  fi
}
# CPU time (user + system) the registry process has used so far, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$registry_proc/stat" 2>/dev/null || echo 0; }

# One counted run (requests from the logs, connections from the proxies), then hyperfine
# (R_RUNS runs, default --runs, after one warm-up).
measure() { # TOOL IMAGES COMMAND...
  local tool=$1 images=$2 r=${R_RUNS:-$runs}
  shift 2
  local before a0 t0 after
  sleep 0.2
  before=$(stats)
  local c0
  c0=$(ticks)
  a0=$(lines "$dir/access.log")
  t0=$(lines "$dir/token.log")
  "$@" >"$work/last.out" 2>"$work/last.err" || {
    echo "bench/wan.sh: $tool failed:" >&2
    tail -20 "$work/last.err" >&2
    exit 1
  }
  sleep 0.4
  after=$(stats)
  local cpu_ms=$((($(ticks) - c0) * 1000 / $(getconf CLK_TCK)))
  local methods
  methods=$(tail -n +"$((a0 + 1))" "$dir/access.log" | awk '{ c[$1 "_" $3]++ } END { for (k in c) printf "%s%s:%d", (s++ ? "," : ""), k, c[k] }')
  local reg_req=$(($(lines "$dir/access.log") - a0)) tok_req=$(($(lines "$dir/token.log") - t0))
  read -r b_rc b_rt b_tc <<<"$before"
  read -r a_rc a_rt a_tc <<<"$after"
  local json=$out/hyperfine/rtt$rtt-$transport-n$n-$tool.json
  "${timer[@]}" -N --style basic --runs "$r" --warmup 1 --export-json "$json" \
    "$(printf '%q ' "$@")" >>"$out/hyperfine.log" 2>&1 || {
    echo "bench/wan.sh: hyperfine failed for $tool; see $out/hyperfine.log" >&2
    exit 1
  }
  local stat
  stat=$(hyperfine_stats "$json")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$transport" "$n" "$tool" "$images" \
    "$(echo "$stat" | tr ' ' '\t')" "$reg_req" "$tok_req" "${methods:--}" \
    "$((a_rc - b_rc))" "$((a_rt - b_rt))" "$((a_tc - b_tc))" "$cpu_ms" >>"$out/wan.tsv"
  printf '  %-15s %-5s RTT %3s ms N=%-5s images=%-5s median %8.3f s  conns %s+%s  requests %s+%s\n' \
    "$tool" "$transport" "$rtt" "$n" "$images" "${stat%% *}" "$((a_rc - b_rc))" "$((a_tc - b_tc))" "$reg_req" "$tok_req"
}

for rtt in $rtts; do
  for transport in $transports; do
    for n in $sizes; do
      log "RTT $rtt ms, $transport, N=$n"
      dir=$work/rtt$rtt-$transport-$n
      mkdir -p "$dir"
      args=(serve --mode token --push-many "$n" --latency-ms "$((rtt / 2))" --proxy-stats "$dir/stats"
        --env-file "$dir/registry.env" --images-file "$dir/images" --access-log "$dir/access.log"
        --token-log "$dir/token.log")
      [ "$transport" = tls ] && args+=(--tls "$certs/server.pem,$certs/server.key,$certs/ca.pem")
      "$testkit" "${args[@]}" >"$dir/serve.log" 2>&1 &
      registry_pid=$!
      until [ -f "$dir/registry.env" ]; do
        kill -0 "$registry_pid" 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
        sleep 0.1
      done
      # shellcheck disable=SC1091
      . "$dir/registry.env"
      registry_proc=$(pgrep -P "$registry_pid" -f docker-registry | head -1 || true)
      export DOCKER_CONFIG=$dir/docker
      mkdir -p "$DOCKER_CONFIG"
      auth=$(printf '%s:%s' "$PULLCHECK_REGISTRY_USER" "$PULLCHECK_REGISTRY_PASSWORD" | base64 -w0)
      printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$PULLCHECK_REGISTRY" "$auth" >"$DOCKER_CONFIG/config.json"
      cut -d' ' -f1 "$dir/images" >"$dir/refs"
      {
        echo 'version: "1"'
        echo 'steps:'
        awk '{ printf "  - name: step-%d\n    image: %s\n    pull: always\n    commands: [\"true\"]\n", NR - 1, $1 }' "$dir/refs"
      } >"$dir/.vela.yml"
      # The peers are timed over the first --seq-max (sequential) or --par-max
      # (xargs -P 8) images and scaled to N by the report: they are linear in N.
      read -r seq_n seq_refs <<<"$(first_images "$seq_max" seq)"
      read -r par_n par_refs <<<"$(first_images "$par_max" par)"
      tls_pc=()
      skopeo_tls=(--tls-verify=false)
      if [ "$transport" = tls ]; then
        tls_pc=(--ca-file "$certs/ca.pem")
        skopeo_tls=(--cert-dir "$certs/skopeo")
      fi
      export BENCH_USER=$PULLCHECK_REGISTRY_USER BENCH_PASSWORD=$PULLCHECK_REGISTRY_PASSWORD
      export BENCH_SKOPEO_TLS="${skopeo_tls[*]}"

      # pullcheck CLI, cold: a new process each run, at the default concurrency.
      measure pullcheck-cli "$n" "$pullcheck" check --docker-config "$DOCKER_CONFIG" "${tls_pc[@]}" "$dir/.vela.yml"
      # The concurrency sweep.
      if [ "$rtt" -gt 0 ] && [[ " $sweep_sizes " == *" $n "* ]]; then
        for c in $sweep; do
          R_RUNS=$sweep_runs measure "pullcheck-cli-c$c" "$n" "$pullcheck" check --concurrency "$c" --docker-config "$DOCKER_CONFIG" "${tls_pc[@]}" "$dir/.vela.yml"
        done
      fi

      # pullcheck serve, warm: the same check a second time through its API.
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$dir/api-token"
      python3 -c 'import json,sys; print(json.dumps({"pipeline": open(sys.argv[1]).read(), "file_name": ".vela.yml"}))' \
        "$dir/.vela.yml" >"$dir/body.json"
      "$pullcheck" serve --listen "127.0.0.1:$port" --api-token-file "$dir/api-token" \
        --docker-config "$DOCKER_CONFIG" "${tls_pc[@]}" --max-checks 4 2>"$dir/pullcheck-serve.log" &
      serve_pid=$!
      until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do
        kill -0 "$serve_pid" 2>/dev/null || { cat "$dir/pullcheck-serve.log" >&2; exit 1; }
        sleep 0.1
      done
      post=(curl -sf -o /dev/null -H "Authorization: Bearer $(cat "$dir/api-token")" -H 'Content-Type: application/json'
        --data "@$dir/body.json" "http://127.0.0.1:$port/v1/checks")
      "${post[@]}" # the first (cold) check through the service
      measure pullcheck-serve "$n" "${post[@]}"
      # curl's own cost: a request to the service that sends nothing onwards.
      measure curl-healthz 0 curl -sf -o /dev/null "http://127.0.0.1:$port/healthz"
      stop_pid "$serve_pid"
      serve_pid=""

      for peer in $peers; do
        case "$peer" in
          skopeo-par8) R_RUNS=$peer_runs measure skopeo-par8 "$par_n" bench/peer.sh skopeo-par8 "$par_refs" ;;
          *) R_RUNS=$peer_runs measure "$peer" "$seq_n" bench/peer.sh "$peer" "$seq_refs" ;;
        esac
      done

      stop_pid "$registry_pid"
      registry_pid=""
      rm -rf "$dir"
    done
  done
done

# The proxy's own cost: a ping through it at 0 ms against one straight to the registry.
log "proxy overhead"
dir=$work/overhead
mkdir -p "$dir"
# Times a TLS ping of HOST from a new curl process (RUNS runs, after RUNS/10 warm-ups) and
# adds "NAME median min max" to overhead.txt.
time_ping() { # NAME HOST RUNS
  local json=$out/hyperfine/overhead-$1.json
  "${timer[@]}" -N --style basic --runs "$3" --warmup "$(($3 / 10))" --export-json "$json" \
    "curl -sf -o /dev/null --cacert $certs/ca.pem https://$2/v2/" >>"$out/hyperfine.log" 2>&1
  echo "$1 $(hyperfine_stats "$json" | cut -d' ' -f1-3)" >>"$out/overhead.txt"
}
# At 0 ms: through the proxy against straight to the registry. At 10 ms each way: a
# ping through the proxy is TCP, TLS and the GET, 3 round trips (60 ms) more than the
# direct one; what it takes beyond is the proxy's timer (tokio's millisecond wheel
# rounds each delayed chunk's due time up).
for delay in 0 10; do
  "$testkit" serve --mode anonymous --latency-ms "$delay" --tls "$certs/server.pem,$certs/server.key,$certs/ca.pem" \
    --env-file "$dir/registry-$delay.env" >"$dir/serve-$delay.log" 2>&1 &
  registry_pid=$!
  until [ -f "$dir/registry-$delay.env" ]; do sleep 0.1; done
  # shellcheck disable=SC1090
  . "$dir/registry-$delay.env"
  if [ "$delay" -eq 0 ]; then
    time_ping proxy "$PULLCHECK_REGISTRY" 50
    time_ping direct "$PULLCHECK_REGISTRY_DIRECT" 50
  else
    time_ping proxy10 "$PULLCHECK_REGISTRY" 30
  fi
  stop_pid "$registry_pid"
  registry_pid=""
done
cat "$out/overhead.txt"

{
  printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf 'load_before\t%s\n' "$load_before"
  printf 'load_after\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf 'nproc\t%s\n' "$(nproc)"
  printf 'runs\t%s\n' "$runs"
  printf 'peer_runs\t%s\n' "$peer_runs"
  printf 'sweep_runs\t%s\n' "$sweep_runs"
  printf 'seq_max\t%s\n' "$seq_max"
  printf 'par_max\t%s\n' "$par_max"
  printf 'concurrency\t%s\n' "$concurrency"
  printf 'pullcheck\t%s\n' "$("$pullcheck" --version)"
  printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf 'timer\t%s\n' "$timer_name"
  printf 'peers\t%s\n' "${peers:-none}"
  command -v skopeo >/dev/null 2>&1 && printf 'skopeo\t%s\n' "$(skopeo --version)"
  command -v docker >/dev/null 2>&1 && printf 'docker\t%s\n' "$(docker --version)"
} >"$out/machine.tsv"

python3 bench/wan-report.py "$out" >"$out/wan.md"
if [ "$docs" -eq 1 ]; then
  python3 bench/wan-report.py --splice docs/benchmarks.md "$out"
  echo "wrote the WAN section of docs/benchmarks.md"
fi
echo "results: $out (wan.tsv, wan.md, hyperfine/*.json)"
