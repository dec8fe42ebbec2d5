#!/usr/bin/env python3
"""The report of bench/wan.sh: Markdown tables (and an SVG chart) from its results.

    bench/wan-report.py RESULTS                       prints the Markdown section
    bench/wan-report.py --resplice FILE               puts the section kept in
                                                      docs/benchmarks-wan.md back into FILE
                                                      (bench/run.sh, after it rewrote FILE)
    bench/wan-report.py --splice FILE RESULTS         also writes it into FILE between
                                                      <!-- wan:begin --> and <!-- wan:end -->
                                                      (inserted after the title if absent),
                                                      and the chart next to FILE

The floor, in round trips (RTT), for a check of N images at concurrency C (the
binary's default, recorded in machine.tsv, unless a sweep row names its own):
  cold over TLS (HTTP/2): TCP + TLS + ping (3) + token on its own connection
    (TCP + TLS + GET, 3) + ceil(N / C) rounds of HEADs = 6 + ceil(N / C)
  cold over plain HTTP/1.1: TCP + ping (2) + token (TCP + GET, 2) + one round of TCP
    handshakes for the other C - 1 connections + ceil(N / C) = 5 + ceil(N / C)
  warm (a service whose ping, token and connection are kept): ceil(N / C)
The floor counts round trips only. The rows at RTT 0 (the same commands through the
proxies without delay) measure what is not round trips: mostly the registry's CPU.
"floor + own time" is the floor plus that row's median.
"""
import json
import math
import os
import sys
from collections import defaultdict

# Timed over the first images only and scaled to N (they are linear in N).
SCALED = {"skopeo-seq", "docker-seq", "skopeo-par8"}
ORDER = ["pullcheck-cli", "pullcheck-serve", "skopeo-par8", "skopeo-seq", "docker-seq"]
LABEL = {
    "pullcheck-cli": "pullcheck check (CLI, cold)",
    "pullcheck-serve": "pullcheck serve (warm, 2nd check)",
    "skopeo-par8": "skopeo inspect, xargs -P 8",
    "skopeo-seq": "skopeo inspect, sequential",
    "docker-seq": "docker manifest inspect, sequential",
}


def concurrency_of(r, machine):
    if r["tool"].startswith("pullcheck-cli-c"):
        return int(r["tool"][len("pullcheck-cli-c"):])
    return int(machine.get("concurrency", "32"))


def floor_rtts(transport, n, c, warm=False):
    rounds = math.ceil(n / c)
    if warm:
        return rounds
    return (6 if transport == "tls" else 5) + rounds


def load(results):
    rows = []
    with open(os.path.join(results, "wan.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            for k in ("rtt_ms", "n", "images", "registry_requests", "token_requests", "runs",
                      "registry_connections", "registry_tls_hellos", "token_connections"):
                r[k] = int(r[k])
            r["registry_cpu_ms"] = int(r.get("registry_cpu_ms") or 0)
            for k in ("median_s", "min_s", "max_s", "stddev_s"):
                r[k] = float(r[k])
            rows.append(r)
    machine = {}
    path = os.path.join(results, "machine.tsv")
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.rstrip("\n").partition("\t")
            machine[k] = v
    overhead = {}
    path = os.path.join(results, "overhead.txt")
    if os.path.exists(path):
        for line in open(path):
            via, med, lo, hi = line.split()
            overhead[via] = (float(med), float(lo), float(hi))
    return rows, machine, overhead


def scaled(r):
    """Median wall time for all N images (the peers are timed over fewer)."""
    if r["tool"] in SCALED and 0 < r["images"] < r["n"]:
        return r["median_s"] * r["n"] / r["images"], True
    return r["median_s"], False


def healthz(rows, rtt, transport, n):
    for r in rows:
        if (r["rtt_ms"], r["transport"], r["n"], r["tool"]) == (rtt, transport, n, "curl-healthz"):
            return r["median_s"]
    return 0.0


def wall_of(rows, r):
    """The median for all N images; for the service without curl's own time."""
    wall, est = scaled(r)
    if r["tool"] == "pullcheck-serve":
        wall = max(wall - healthz(rows, r["rtt_ms"], r["transport"], r["n"]), 0.0)
    return wall, est


def over_floor_and_own(wall, floor, rtt_ms, own):
    """wall / (the floor's round trips at rtt_ms + the own time), all in seconds."""
    return wall / (floor * rtt_ms / 1000 + own)


def spread_of(rows, r):
    """(min, max) in seconds; for the service without curl's own time, as the median."""
    lo, hi = r["min_s"], r["max_s"]
    if r["tool"] == "pullcheck-serve":
        curl = healthz(rows, r["rtt_ms"], r["transport"], r["n"])
        lo, hi = max(lo - curl, 0.0), max(hi - curl, 0.0)
    return lo, hi


def own_time(rows, r):
    """The same tool's median at RTT 0 (same transport and N), or None."""
    tool = "pullcheck-cli" if r["tool"].startswith("pullcheck-cli") else r["tool"]
    z = find(rows, 0, r["transport"], r["n"], tool)
    return wall_of(rows, z)[0] if z else None


def load_during(results):
    path = os.path.join(results, "load.txt")
    peak = 0.0
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) >= 2:
                peak = max(peak, float(parts[1]))
    return peak


def report(rows, machine, overhead, peak_load):
    out = []
    p = out.append
    c = int(machine.get("concurrency", "32"))
    rtts = sorted({r["rtt_ms"] for r in rows if r["rtt_ms"] > 0})
    p("## Across a network: TLS, %s ms round trips, cold and warm" % " and ".join(str(x) for x in rtts))
    p("")
    p("Made by `bench/run.sh --wan` ([`bench/wan.sh`](../bench/wan.sh)) on %s (%s); "
      "%s runs of each pullcheck command, %s of each in the concurrency sweep and %s of each peer (%s, after one warm-up; peers: %s), "
      "load average %s before, %s after, at most %.2f during (1-minute, sampled every 5 s) "
      "on %s cores. Token auth; the registry (Debian's docker-registry) and the token server "
      "each behind the testkit's latency proxy, which adds the one-way delay each way and "
      "charges the TCP handshake one round trip. **TLS**: the registry serves TLS itself "
      "(HTTP/2 by ALPN), the token server behind a TLS front (HTTP/1.1), certificates from a "
      "CA the benchmark makes. **plain**: HTTP/1.1 without TLS. pullcheck at its default "
      "concurrency, %d. The sequential peers are timed over the first %s images, skopeo "
      "with `xargs -P 8` over the first %s, and scaled to N (\"est.\")."
      % (machine.get("date", "?"), machine.get("commit", "?"), machine.get("runs", "?"), machine.get("sweep_runs", "?"),
         machine.get("peer_runs", "?"), machine.get("timer", "hyperfine"), machine.get("peers", "skopeo-par8 skopeo-seq docker-seq"),
         machine.get("load_before", "?"),
         machine.get("load_after", "?"), peak_load, machine.get("nproc", "?"), c,
         machine.get("seq_max", "?"), machine.get("par_max", "?")))
    p("")
    if overhead:
        d, pr, p10 = overhead.get("direct"), overhead.get("proxy"), overhead.get("proxy10")
        if d and pr:
            line = ("The proxy's own cost: at 0 ms a TLS ping from a new curl process takes "
                    "%.2f ms through it against %.2f ms straight to the registry (medians of "
                    "50), %+.2f ms per new connection." % (pr[0] * 1e3, d[0] * 1e3, (pr[0] - d[0]) * 1e3))
            if p10:
                extra = p10[0] * 1e3 - 60 - d[0] * 1e3
                line += (" At 10 ms each way the same ping (TCP, TLS, GET: 3 round trips, 60 ms "
                         "more than the direct one) takes %.2f ms (median of 30): %+.2f ms for "
                         "6 delayed crossings, %+.2f ms each, the proxy's timer rounding its due "
                         "times up to tokio's millisecond tick." % (p10[0] * 1e3, extra, extra / 6))
            p(line)
            p("")
    p("Floor, in round trips: cold over TLS = 6 + ⌈N/C⌉ (TCP, TLS, ping; the token on its "
      "own connection: TCP, TLS, GET; the `HEAD` rounds that concurrency C allows); cold "
      "over plain HTTP = 5 + ⌈N/C⌉; warm = ⌈N/C⌉. The floor counts round trips only; the "
      "**RTT 0** rows (the same commands through the proxies, without delay) measure the "
      "rest, mostly the registry's CPU, and *× (floor + own time)* divides by the floor plus "
      "that row. *Requests/image* counts registry and token requests from their logs; "
      "*connections* are those the proxies accepted (registry + token server; for plain "
      "HTTP pullcheck's first is its `https://` attempt); *registry CPU* is the user and "
      "system time the registry process used in the counted run (from `/proc`), per "
      "request it served.")
    p("")
    groups = defaultdict(list)
    for r in rows:
        if r["tool"] in ORDER:
            groups[(r["rtt_ms"], r["transport"])].append(r)
    for (rtt, transport) in sorted(groups, key=lambda k: (k[0] == 0, k[0], k[1] != "tls")):
        p("### RTT %d ms, %s%s" % (rtt, "TLS" if transport == "tls" else "plain HTTP",
                                   " (no delay: the own time)" if rtt == 0 else ""))
        p("")
        p("| N | tool | median | spread (min–max) | in RTTs | × floor | × (floor + own time) | requests/image | connections | registry CPU |")
        p("|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(groups[(rtt, transport)], key=lambda r: (r["n"], ORDER.index(r["tool"]))):
            wall, est = wall_of(rows, r)
            n = r["n"]
            warm = r["tool"] == "pullcheck-serve"
            fl = floor_rtts(transport, n, c, warm)
            ours = r["tool"].startswith("pullcheck")
            in_rtts = "%.1f" % (wall * 1000 / rtt) if rtt else "–"
            times = "×%.2f" % (wall * 1000 / rtt / fl) if ours and rtt else ""
            own = own_time(rows, r) if ours and rtt else None
            adj = "×%.2f" % over_floor_and_own(wall, fl, rtt, own) if own is not None else ""
            img = max(r["images"], 1)
            req = "%.2f" % ((r["registry_requests"] + r["token_requests"]) / img)
            conns = "%d + %d" % (r["registry_connections"], r["token_connections"])
            lo, hi = spread_of(rows, r)
            cpu = "%d ms (%.1f/request)" % (r["registry_cpu_ms"], r["registry_cpu_ms"] / max(r["registry_requests"], 1))
            p("| %d | %s | %s%s | %.0f–%.0f ms (σ %.0f) | %s | %s | %s | %s | %s | %s |" % (
                n, LABEL[r["tool"]], fmt_ms(wall), " est." if est else "",
                lo * 1e3, hi * 1e3, r["stddev_s"] * 1e3, in_rtts, times, adj, req,
                conns + (" (per %d)" % r["images"] if est else ""), cpu))
        p("")
    sweep = [r for r in rows if r["tool"].startswith("pullcheck-cli-c")]
    if sweep:
        p("### Concurrency sweep: `pullcheck check --concurrency C`")
        p("")
        p("| RTT | transport | N | C | median | min–max | in RTTs | floor | × floor | × (floor + own time) | registry connections |")
        p("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(sweep, key=lambda r: (r["rtt_ms"], r["transport"] != "tls", r["n"], concurrency_of(r, machine))):
            rc = concurrency_of(r, machine)
            fl = floor_rtts(r["transport"], r["n"], rc)
            own = own_time(rows, r)
            wall = r["median_s"]
            adj = "×%.2f" % over_floor_and_own(wall, fl, r["rtt_ms"], own) if own is not None else ""
            p("| %d ms | %s | %d | %d%s | %s | %.0f–%.0f ms | %.1f | %d | ×%.2f | %s | %d |" % (
                r["rtt_ms"], "TLS" if r["transport"] == "tls" else "plain", r["n"], rc,
                " (default)" if rc == c else "", fmt_ms(wall), r["min_s"] * 1e3, r["max_s"] * 1e3,
                wall * 1000 / r["rtt_ms"], fl, wall * 1000 / r["rtt_ms"] / fl, adj,
                r["registry_connections"]))
        p("")
        p("*× (floor + own time)* uses the RTT 0 run at the default concurrency.")
        p("")
    p(targets(rows, machine))
    return "\n".join(out)


def fmt_ms(s):
    return "%.0f ms" % (s * 1e3) if s < 10 else "%.1f s" % s


def find(rows, rtt, transport, n, tool):
    for r in rows:
        if (r["rtt_ms"], r["transport"], r["n"], r["tool"]) == (rtt, transport, n, tool):
            return r
    return None


def targets(rows, machine):
    c = int(machine.get("concurrency", "32"))
    out = ["### Targets", ""]
    cli = find(rows, 20, "tls", 100, "pullcheck-cli")
    seq = find(rows, 20, "tls", 100, "skopeo-seq")
    if cli and seq:
        speed = scaled(seq)[0] / cli["median_s"]
        fl = floor_rtts("tls", 100, c)
        ratio = cli["median_s"] * 1000 / 20 / fl
        own = own_time(rows, cli)
        line = ("- 20 ms RTT, N = 100, TLS, CLI cold: **%.0f×** faster than sequential skopeo "
                "(target 50×: %s); **%.2f×** the cold floor of %d RTT (target 1.3×: %s)" % (
                    speed, "met" if speed >= 50 else "missed", ratio, fl,
                    "met" if ratio <= 1.3 else "missed"))
        if own is not None:
            line += ("; the same check without delay takes %.0f ms, and against the floor plus "
                     "that own time it is at **×%.2f**" % (own * 1e3, over_floor_and_own(cli["median_s"], fl, 20, own)))
        out.append(line + ".")
    warm = find(rows, 20, "tls", 10, "pullcheck-serve")
    if warm:
        wall = wall_of(rows, warm)[0]
        rt = wall * 1000 / 20
        only_heads = warm["by_method"].startswith("HEAD_") and "," not in warm["by_method"]
        own = own_time(rows, warm)
        line = ("- Warm service, 10 images, 20 ms RTT, TLS: **%.2f RTT** without curl's own "
                "%.1f ms (target 1.5: %s), requests `%s`, %d token requests, %d new "
                "connections (target: 10 `HEAD`s and nothing else: %s)" % (
                    rt, healthz(rows, 20, "tls", 10) * 1e3, "met" if rt <= 1.5 else "missed",
                    warm["by_method"], warm["token_requests"],
                    warm["registry_connections"] + warm["token_connections"],
                    "met" if only_heads and warm["registry_requests"] == 10 and warm["token_requests"] == 0 else "missed"))
        if own is not None:
            line += "; without delay the same warm check takes %.1f ms" % (own * 1e3)
        out.append(line + ".")
    tls_conns = [r for r in rows if r["tool"].startswith("pullcheck-cli") and r["transport"] == "tls" and r["rtt_ms"] > 0]
    plain_conns = [r for r in rows if r["tool"].startswith("pullcheck-cli") and r["transport"] == "plain" and r["rtt_ms"] > 0]
    if tls_conns:
        # Those that opened with a TLS hello carried requests; the rest are the bare TCP
        # connection opened beside the https attempt for a plain one, closed unused.
        worst = max(r["registry_tls_hellos"] for r in tls_conns)
        spare = max(r["registry_connections"] - r["registry_tls_hellos"] for r in tls_conns)
        tokens = sorted({(r["token_connections"], r["token_requests"]) for r in tls_conns})
        out.append("- Connections over HTTP/2 (TLS): at most **%d** TLS connection%s to the registry in any CLI "
                   "run, sweep included (target 1: %s), and at most %d more accepted that sent nothing "
                   "(the spare TCP connection opened beside the `https://` attempt for a plain one, "
                   "closed once https answered); to the token server (HTTP/1.1) one per "
                   "token request asked at once: %s." % (
                       worst, "" if worst == 1 else "s", "met" if worst <= 1 else "missed", spare,
                       ", ".join("%d for %d token request%s" % (k, t, "" if t == 1 else "s") for k, t in tokens)))
    if plain_conns:
        over = []
        for r in plain_conns:
            rc = concurrency_of(r, machine)
            plain = r["registry_connections"] - r["registry_tls_hellos"]
            over.append((plain - min(rc, r["n"]), plain, rc, r))
        worst = max(over, key=lambda o: o[0])
        probes = max(r["registry_tls_hellos"] for r in plain_conns)
        out.append("- Connections over HTTP/1.1 (plain): at most **%d** plain connections to the "
                   "registry above min(N, C) in any CLI run, sweep included (worst: %d for C = %d, "
                   "N = %d, %d ms; target: at most C: %s), plus %d `https://` attempt, which "
                   "pullcheck makes, as Docker does, before it falls back to plain HTTP." % (
                       max(worst[0], 0), worst[1], worst[2], worst[3]["n"], worst[3]["rtt_ms"],
                       "met" if worst[0] <= 0 else "missed", probes))
    return "\n".join(out) + "\n"


def svg_chart(rows, path):
    """Wall time against N, one line per tool; one panel per RTT (columns) and transport
    (rows); log scales."""
    colors = {"pullcheck-cli": "#d62728", "pullcheck-serve": "#ff7f0e", "skopeo-par8": "#1f77b4",
              "skopeo-seq": "#2ca02c", "docker-seq": "#9467bd"}
    mine = [r for r in rows if r["tool"] in colors]
    rtts = sorted({r["rtt_ms"] for r in mine})
    transports = sorted({r["transport"] for r in mine}, key=lambda t: t != "tls")
    pw, ph, m, gap = 330, 230, 60, 50
    width = pw * len(rtts) + m
    height = m + len(transports) * (ph + gap) + 30 + 18 * len(colors)
    ns = sorted({r["n"] for r in mine})
    times = [wall_of(rows, r)[0] for r in mine]
    lo = 10 ** math.floor(math.log10(max(min(times), 1e-3)))
    hi = 10 ** math.ceil(math.log10(max(times)))
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, sans-serif" font-size="11">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>']

    def x(i, n):
        if len(ns) == 1:
            return i * pw + m + pw / 2
        return i * pw + m + (math.log10(n) - math.log10(ns[0])) / (math.log10(ns[-1]) - math.log10(ns[0])) * (pw - 40)

    def y(j, t):
        top = m + j * (ph + gap)
        return top + ph - (math.log10(t) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

    for j, transport in enumerate(transports):
        top = m + j * (ph + gap)
        for i, rtt in enumerate(rtts):
            s.append('<text x="%d" y="%d" font-weight="bold">RTT %d ms, %s</text>' % (
                i * pw + m, top - 10, rtt, "TLS" if transport == "tls" else "plain HTTP"))
            s.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (i * pw + m, top, pw - 40, ph))
            e = math.log10(lo)
            while e <= math.log10(hi) + 1e-9:
                t = 10 ** e
                s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (i * pw + m, i * pw + m + pw - 40, y(j, t), y(j, t)))
                if i == 0:
                    s.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (m - 4, y(j, t) + 4, ("%g s" % t) if t >= 1 else ("%g ms" % (t * 1000))))
                e += 1
            for n in ns:
                s.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(i, n), top + ph + 14, n))
            for tool, color in colors.items():
                pts = sorted((r["n"], wall_of(rows, r)[0]) for r in mine if (r["rtt_ms"], r["transport"], r["tool"]) == (rtt, transport, tool))
                pts = [(n, t) for n, t in pts if t > 0]
                if pts:
                    s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (color, " ".join("%.1f,%.1f" % (x(i, n), y(j, t)) for n, t in pts)))
                    for n, t in pts:
                        s.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x(i, n), y(j, t), color))
    base = m + len(transports) * (ph + gap)
    s.append('<text x="%d" y="%d">images (N) against wall time (median; peers timed over their first images and scaled to N; the service without curl\'s own time); log scales</text>' % (m, base - 8))
    for k, (tool, color) in enumerate(colors.items()):
        yy = base + 12 + 18 * k
        s.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>' % (m, m + 20, yy - 4, yy - 4, color))
        s.append('<text x="%d" y="%d">%s</text>' % (m + 26, yy, LABEL[tool]))
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def put_section(splice, section):
    text = open(splice).read() if os.path.exists(splice) else "# Benchmarks\n"
    begin, end = text.find("<!-- wan:begin"), text.find("<!-- wan:end -->")
    if begin >= 0 and end > begin:
        text = text[:begin] + section + text[end + len("<!-- wan:end -->\n"):]
    else:
        nl = text.find("\n\n")
        head, rest = (text[:nl + 2], text[nl + 2:]) if nl >= 0 else (text + "\n\n", "")
        text = head + section + "\n" + rest
    with open(splice, "w") as f:
        f.write(text)


def main(argv):
    splice = None
    if argv[:1] == ["--resplice"] and len(argv) == 2:
        kept = os.path.join(os.path.dirname(argv[1]) or ".", "benchmarks-wan.md")
        if os.path.exists(kept):
            put_section(argv[1], open(kept).read())
        return
    if argv[:1] == ["--splice"]:
        splice, argv = argv[1], argv[2:]
    if len(argv) != 1:
        sys.exit(__doc__)
    rows, machine, overhead = load(argv[0])
    svg_chart(rows, os.path.join(argv[0], "benchmarks-wan.svg"))
    md = report(rows, machine, overhead, load_during(argv[0]))
    if splice is None:
        print(md)
        return
    svg = os.path.join(os.path.dirname(splice) or ".", "benchmarks-wan.svg")
    svg_chart(rows, svg)
    md += "\n![wall time against N across a network](benchmarks-wan.svg)\n"
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wan-notes.md")
    if os.path.exists(notes):
        text = open(notes).read()
        # The notes are written by hand for one run; a newer run's tables come with a
        # line saying so, until the notes are rewritten for it.
        written_for = text.split("notes-for: ", 1)[1].split(" ", 1)[0] if "notes-for: " in text else "?"
        if written_for != machine.get("date", ""):
            md += ("\n> **The notes below were written for the run of %s; the tables above are "
                   "from %s.** Their numbers are that run's until `bench/wan-notes.md` is "
                   "rewritten.\n" % (written_for, machine.get("date", "?")))
        md += "\n" + text
    section = "<!-- wan:begin (bench/run.sh --wan writes this section) -->\n" + md + "<!-- wan:end -->\n"
    kept = os.path.join(os.path.dirname(splice) or ".", "benchmarks-wan.md")
    with open(kept, "w") as f:
        f.write(section)
    put_section(splice, section)


if __name__ == "__main__":
    main(sys.argv[1:])
