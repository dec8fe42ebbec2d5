#!/usr/bin/env python3
"""A stand-in for `hyperfine -N` where hyperfine is not installed (bench/wan.sh uses it
then, and says so in machine.tsv): the options wan.sh passes, and the fields of
hyperfine's JSON export that bench/wan-report.py reads.

    bench/timer.py -N --style basic --runs R --warmup W --export-json FILE COMMAND

COMMAND is one string, split as a shell would split it (shlex) but run without a shell,
as hyperfine -N runs it; its output goes to /dev/null. Each run is timed as wall time
from just before the process is started to just after it has exited
(time.perf_counter), as hyperfine measures it. A run that exits non-zero fails the
whole command with hyperfine's exit status 1. Export: {"results": [{"command", "mean",
"stddev", "median", "min", "max", "times", "exit_codes"}]}, times in seconds; stddev is
the sample standard deviation (None for one run), as hyperfine's.
"""

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser(prog="bench/timer.py")
    p.add_argument("-N", action="store_true", help="no shell (the only mode)")
    p.add_argument("--style", default="basic")
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--export-json", required=True)
    p.add_argument("command")
    a = p.parse_args()
    argv = shlex.split(a.command)
    if a.runs < 1 or not argv:
        p.error("--runs must be at least 1 and the command not empty")

    def once():
        started = time.perf_counter()
        code = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode
        took = time.perf_counter() - started
        if code != 0:
            print("bench/timer.py: %s exited %d" % (a.command, code), file=sys.stderr)
            sys.exit(1)
        return took

    for _ in range(a.warmup):
        once()
    times = [once() for _ in range(a.runs)]
    result = {
        "command": a.command,
        "mean": statistics.fmean(times),
        "stddev": statistics.stdev(times) if len(times) > 1 else None,
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "times": times,
        "exit_codes": [0] * len(times),
    }
    with open(a.export_json, "w") as f:
        json.dump({"results": [result]}, f)
    print("%s: median %.1f ms (%d runs, min %.1f, max %.1f)" % (
        a.command[:60], result["median"] * 1e3, len(times), result["min"] * 1e3, result["max"] * 1e3))


if __name__ == "__main__":
    main()
