#!/usr/bin/env bash
# Issue 27's example, two pullcheck binaries side by side (bench/README.md):
#
#   bench/rtt-slope.sh BEFORE [AFTER]
#
# an anonymous plain-HTTP registry with 50 images behind the testkit's latency proxy at
# 0, 20 and 50 ms RTT; per binary one counted run (requests, proxy counts), then 2
# alternating blocks of 10 runs (hyperfine -N, or bench/timer.py where hyperfine is
# not installed; one warm-up); then the round trips on
# the critical path from the slope between 20 and 50 ms, which the own time (the
# registry's CPU, the process start) does not change. AFTER defaults to
# target/release/pullcheck. Run it inside a loopback-only network namespace
# (unshare -rn sh -c 'ip link set lo up; ...').
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?usage: bench/rtt-slope.sh BEFORE [AFTER]}
after=${2:-$root/target/release/pullcheck}
tk=$root/target/release/pullcheck-testkit
# hyperfine -N where it is installed, else bench/timer.py (same options, same JSON).
if command -v hyperfine >/dev/null 2>&1; then
  timer=hyperfine; timer_name="hyperfine $(hyperfine --version | cut -d' ' -f2)"
else
  timer="python3 $root/bench/timer.py"; timer_name="bench/timer.py (hyperfine not installed)"
fi
echo "timer: $timer_name"
out=$root/target/bench/rtt-slope
rm -rf "$out"; mkdir -p "$out/empty-docker"
echo '{}' > "$out/empty-docker/config.json"
for delay in 0 10 25; do
  name=anon-$delay
  "$tk" serve --mode anonymous --push-many 50 --latency-ms "$delay" --proxy-stats "$out/$name.stats" \
    --env-file "$out/$name.env" --images-file "$out/$name.images" --access-log "$out/$name.access" >"$out/$name.serve.log" 2>&1 &
  tk_pid=$!
  until [ -f "$out/$name.env" ]; do kill -0 $tk_pid; sleep 0.1; done
  args=()
  while read -r ref _; do args+=(--image "$ref"); done <"$out/$name.images"
  for which in before after; do
    bin=${!which}
    sleep 0.3
    s0=$(cat "$out/$name.stats"); a0=$(wc -l <"$out/$name.access")
    "$bin" check --docker-config "$out/empty-docker" "${args[@]}" >"$out/$name-$which.out" 2>&1 || { cat "$out/$name-$which.out"; exit 1; }
    sleep 0.5
    s1=$(cat "$out/$name.stats"); a1=$(wc -l <"$out/$name.access")
    echo "$name $which: requests $((a1 - a0)) ($(tail -n +$((a0 + 1)) "$out/$name.access" | awk '{ c[$1 "_" $3]++ } END { for (k in c) printf "%s:%d ", k, c[k] }')); proxy stats before [$s0] after [$s1]"
  done
  for round in 1 2; do
    for which in before after; do
      bin=${!which}
      cmd=$(printf '%q ' "$bin" check --docker-config "$out/empty-docker" "${args[@]}")
      echo -n "$name $which round $round: "
      $timer -N --style basic --runs 10 --warmup 1 --export-json "$out/$name-$which-$round.json" "$cmd" >>"$out/timer.log" 2>&1 ||
        { echo "timer failed; see $out/timer.log"; exit 1; }
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; t=r["times"]; print("median %.1f ms (%d runs, min %.1f, max %.1f)" % (r["median"]*1e3, len(t), r["min"]*1e3, r["max"]*1e3))' "$out/$name-$which-$round.json"
    done
  done
  kill "$tk_pid"; wait "$tk_pid" 2>/dev/null || true
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def times(delay, which):
    t = []
    for r in (1, 2):
        t += json.load(open("%s/anon-%d-%s-%d.json" % (out, delay, which, r)))["results"][0]["times"]
    return t
for which in ("before", "after"):
    m = {d: statistics.median(times(d, which)) * 1e3 for d in (0, 10, 25)}
    print("%s: median %.1f ms at RTT 0, %.1f ms at 20 ms (%.2f RTT), %.1f ms at 50 ms (%.2f RTT); slope (50 - 20 ms) / 30 ms = %.2f round trips" % (
        which, m[0], m[10], m[10] / 20, m[25], m[25] / 50, (m[25] - m[10]) / 30))
PY
