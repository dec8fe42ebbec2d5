#!/usr/bin/env bash
# Loopback, token auth, N = 100 (no proxy; bench/README.md): 40 runs of
# `pullcheck check .vela.yml` (100 steps), their wall time, and the CPU of every process
# the check needs: the registry and the testkit (its token server) from /proc, pullcheck
# from getrusage of its runs; their sum over the cores is the machine's physical limit.
# Run it inside a loopback-only network namespace (unshare -rn sh -c 'ip link set lo up; ...').
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pc=$root/target/release/pullcheck
tk=$root/target/release/pullcheck-testkit
out=$root/target/bench/loopback-cpu
rm -rf "$out"; mkdir -p "$out/docker"
"$tk" serve --mode token --push-many 100 --env-file "$out/env" --images-file "$out/images" \
  --access-log "$out/access" --token-log "$out/token" >"$out/serve.log" 2>&1 &
tk_pid=$!
until [ -f "$out/env" ]; do kill -0 $tk_pid; sleep 0.1; done
. "$out/env"
reg_pid=$(pgrep -P "$tk_pid" -f docker-registry | head -1)
auth=$(printf '%s:%s' "$PULLCHECK_REGISTRY_USER" "$PULLCHECK_REGISTRY_PASSWORD" | base64 -w0)
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$PULLCHECK_REGISTRY" "$auth" >"$out/docker/config.json"
{
  echo 'version: "1"'; echo 'steps:'
  awk '{ printf "  - name: step-%d\n    image: %s\n    pull: always\n    commands: [\"true\"]\n", NR - 1, $1 }' "$out/images"
} >"$out/vela.yml"
sleep 0.5
a0=$(wc -l <"$out/access"); t0=$(wc -l <"$out/token")
"$pc" check --docker-config "$out/docker" "$out/vela.yml" >"$out/check.out" 2>&1
sleep 0.5
echo "counted run: registry requests $(( $(wc -l <"$out/access") - a0 )) ($(tail -n +$((a0 + 1)) "$out/access" | awk '{ c[$1 "_" $3]++ } END { for (k in c) printf "%s:%d ", k, c[k] }')), token requests $(( $(wc -l <"$out/token") - t0 ))"
python3 - "$pc" "$out" "$reg_pid" "$tk_pid" <<'PY'
import os, resource, statistics, subprocess, sys, time
pc, out, reg, tk = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
hz = os.sysconf("SC_CLK_TCK")
def ticks(pid):
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
argv = [pc, "check", "--docker-config", out + "/docker", out + "/vela.yml"]
run = lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
run()
runs = 40
r0, k0 = ticks(reg), ticks(tk)
u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
walls = []
for _ in range(runs):
    t = time.perf_counter(); run(); walls.append(time.perf_counter() - t)
u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
r1, k1 = ticks(reg), ticks(tk)
reg_ms = (r1 - r0) * 1000 / hz / runs
tk_ms = (k1 - k0) * 1000 / hz / runs
pc_ms = ((u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)) * 1000 / runs
total = reg_ms + tk_ms + pc_ms
limit = total / os.cpu_count()
med = statistics.median(walls) * 1000
print("%d runs: wall median %.1f ms (min %.1f, max %.1f, mean %.1f)" % (runs, med, min(walls) * 1e3, max(walls) * 1e3, statistics.fmean(walls) * 1e3))
print("CPU per check: registry %.1f ms, token server (testkit) %.1f ms, pullcheck %.1f ms; total %.1f ms on %d cores: physical limit %.1f ms; median / limit = %.2f" % (
    reg_ms, tk_ms, pc_ms, total, os.cpu_count(), limit, med / limit))
PY
kill "$tk_pid"; wait "$tk_pid" 2>/dev/null || true
