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

The floor, in round trips (RTT), for a check of N images with concurrency C = 16:
  cold over TLS (HTTP/2): TCP + TLS + ping (3) + token on its own connection
    (TCP + TLS + GET, 3) + ceil(N / C) rounds of HEADs = 6 + ceil(N / C)
  cold over plain HTTP/1.1: TCP + ping (2) + token (TCP + GET, 2) + one round of TCP
    handshakes for the other C - 1 connections + ceil(N / C) = 5 + ceil(N / C)
  warm (a service whose ping, token and connection are kept): ceil(N / C)
"""
import json
import math
import os
import sys
from collections import defaultdict

CONCURRENCY = 16
SEQUENTIAL = {"skopeo-seq", "docker-seq"}
ORDER = ["pullcheck-cli", "pullcheck-serve", "skopeo-par8", "skopeo-seq", "docker-seq"]
LABEL = {
    "pullcheck-cli": "pullcheck check (CLI, cold)",
    "pullcheck-serve": "pullcheck serve (warm, 2nd check)",
    "skopeo-par8": "skopeo inspect, xargs -P 8",
    "skopeo-seq": "skopeo inspect, sequential",
    "docker-seq": "docker manifest inspect, sequential",
}


def floor_rtts(transport, n, warm=False):
    rounds = math.ceil(n / CONCURRENCY)
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
    """Median wall time for all N images (the sequential peers are timed over fewer)."""
    if r["tool"] in SEQUENTIAL and 0 < r["images"] < r["n"]:
        return r["median_s"] * r["n"] / r["images"], True
    return r["median_s"], False


def healthz(rows, rtt, transport, n):
    for r in rows:
        if (r["rtt_ms"], r["transport"], r["n"], r["tool"]) == (rtt, transport, n, "curl-healthz"):
            return r["median_s"]
    return 0.0


def report(rows, machine, overhead):
    out = []
    p = out.append
    p("## Across a network: TLS, 20 and 50 ms round trips, cold and warm")
    p("")
    p("Made by `bench/run.sh --wan` ([`bench/wan.sh`](../bench/wan.sh)) on %s; %s runs of each "
      "command (hyperfine), load average %s before and %s after on %s cores (other helpers' "
      "builds ran at the same time: the spread columns show it). Token auth; the registry "
      "(Debian's docker-registry) and the token server each behind the testkit's latency "
      "proxy, which adds the one-way delay each way and charges the TCP handshake one round "
      "trip. **TLS**: the registry serves TLS itself (HTTP/2 by ALPN), the token server "
      "behind a TLS front (HTTP/1.1), certificates from a CA the benchmark makes. **plain**: "
      "HTTP/1.1 without TLS. The sequential peers are timed over the first %s images and "
      "scaled to N (\"est.\")."
      % (machine.get("date", "?"), machine.get("runs", "?"), machine.get("load_before", "?"),
         machine.get("load_after", "?"), machine.get("nproc", "?"), machine.get("seq_max", "?")))
    p("")
    if overhead:
        d, pr = overhead.get("direct"), overhead.get("proxy")
        if d and pr:
            p("The proxy's own cost at 0 ms: a TLS ping from a new curl process takes %.2f ms "
              "through it against %.2f ms straight to the registry (medians of 50), +%.2f ms "
              "per new connection." % (pr[0] * 1e3, d[0] * 1e3, (pr[0] - d[0]) * 1e3))
            p("")
    p("Floor, in round trips: cold over TLS = 6 + ⌈N/16⌉ (TCP, TLS, ping; the token on its "
      "own connection: TCP, TLS, GET; the `HEAD` rounds that concurrency 16 allows); cold "
      "over plain HTTP = 5 + ⌈N/16⌉; warm = ⌈N/16⌉. *Requests/image* counts registry and "
      "token requests from their logs; *connections* are those the proxies accepted "
      "(registry + token server; for plain HTTP pullcheck's first is its `https://` attempt).")
    p("")
    groups = defaultdict(list)
    for r in rows:
        if r["tool"] == "curl-healthz":
            continue
        groups[(r["rtt_ms"], r["transport"])].append(r)
    for (rtt, transport) in sorted(groups, key=lambda k: (k[0], k[1] != "tls")):
        p("### RTT %d ms, %s" % (rtt, "TLS" if transport == "tls" else "plain HTTP"))
        p("")
        p("| N | tool | median | spread (min–max) | in RTTs | × floor | requests/image | connections |")
        p("|---|---|---|---|---|---|---|---|")
        for r in sorted(groups[(rtt, transport)], key=lambda r: (r["n"], ORDER.index(r["tool"]))):
            wall, est = scaled(r)
            n = r["n"]
            warm = r["tool"] == "pullcheck-serve"
            if warm:
                # The service's time without curl's own (a /healthz request).
                wall = max(wall - healthz(rows, rtt, transport, n), 0.0)
            rtts = wall * 1000 / rtt
            fl = floor_rtts(transport, n, warm)
            times = "×%.2f" % (rtts / fl) if r["tool"].startswith("pullcheck") else ""
            img = max(r["images"], 1)
            req = "%.2f" % ((r["registry_requests"] + r["token_requests"]) / img)
            conns = "%d + %d" % (r["registry_connections"], r["token_connections"])
            p("| %d | %s | %s%s | %.0f–%.0f ms (σ %.0f) | %.1f | %s | %s | %s |" % (
                n, LABEL[r["tool"]], fmt_ms(wall), " est." if est else "",
                r["min_s"] * 1e3, r["max_s"] * 1e3, r["stddev_s"] * 1e3, rtts, times, req,
                conns + (" (per %d)" % r["images"] if est else "")))
        p("")
    p(targets(rows))
    return "\n".join(out)


def fmt_ms(s):
    return "%.0f ms" % (s * 1e3) if s < 10 else "%.1f s" % s


def find(rows, rtt, transport, n, tool):
    for r in rows:
        if (r["rtt_ms"], r["transport"], r["n"], r["tool"]) == (rtt, transport, n, tool):
            return r
    return None


def targets(rows):
    out = ["### Targets", ""]
    cli = find(rows, 20, "tls", 100, "pullcheck-cli")
    seq = find(rows, 20, "tls", 100, "skopeo-seq")
    if cli and seq:
        speed = scaled(seq)[0] / cli["median_s"]
        ratio = cli["median_s"] * 1000 / 20 / floor_rtts("tls", 100)
        out.append("- 20 ms RTT, N = 100, TLS, CLI cold: **%.0f×** faster than sequential skopeo "
                   "(target 50×: %s); **%.2f×** the cold floor of %d RTT (target 1.3×: %s)." % (
                       speed, "met" if speed >= 50 else "missed", ratio, floor_rtts("tls", 100),
                       "met" if ratio <= 1.3 else "missed"))
    warm = find(rows, 20, "tls", 10, "pullcheck-serve")
    if warm:
        wall = max(warm["median_s"] - healthz(rows, 20, "tls", 10), 0.0)
        rt = wall * 1000 / 20
        only_heads = warm["by_method"].startswith("HEAD_") and "," not in warm["by_method"]
        out.append("- Warm service, 10 images, 20 ms RTT, TLS: **%.2f RTT** without curl's own "
                   "%.1f ms (target 1.5: %s), requests `%s`, %d token requests, %d new "
                   "connections (target: 10 `HEAD`s and nothing else: %s)." % (
                       rt, healthz(rows, 20, "tls", 10) * 1e3, "met" if rt <= 1.5 else "missed",
                       warm["by_method"], warm["token_requests"], warm["registry_connections"] + warm["token_connections"],
                       "met" if only_heads and warm["registry_requests"] == 10 and warm["token_requests"] == 0 else "missed"))
    tls_conns = [r for r in rows if r["tool"] == "pullcheck-cli" and r["transport"] == "tls"]
    plain_conns = [r for r in rows if r["tool"] == "pullcheck-cli" and r["transport"] == "plain"]
    if tls_conns:
        worst = max(r["registry_connections"] for r in tls_conns)
        out.append("- Connections over HTTP/2 (TLS): at most **%d** to the registry in any CLI "
                   "run (target 1: %s), and 1 to the token server." % (worst, "met" if worst <= 1 else "missed"))
    if plain_conns:
        worst = max(r["registry_connections"] - r["registry_tls_hellos"] for r in plain_conns)
        probes = max(r["registry_tls_hellos"] for r in plain_conns)
        out.append("- Connections over HTTP/1.1 (plain): at most **%d** plain connections to the "
                   "registry (target ≤ 16, the concurrency: %s), plus %d `https://` attempt, which "
                   "pullcheck makes, as Docker does, before it falls back to plain HTTP." % (
                       worst, "met" if worst <= CONCURRENCY else "missed", probes))
    return "\n".join(out) + "\n"


def svg_chart(rows, path):
    """Wall time against N, one line per tool, one panel per (RTT, transport); log scales."""
    panels = sorted({(r["rtt_ms"], r["transport"]) for r in rows}, key=lambda k: (k[1] != "tls", k[0]))
    colors = {"pullcheck-cli": "#d62728", "pullcheck-serve": "#ff7f0e", "skopeo-par8": "#1f77b4",
              "skopeo-seq": "#2ca02c", "docker-seq": "#9467bd"}
    pw, ph, m = 360, 260, 50
    width = pw * len(panels) + m
    height = ph + 2 * m + 20 * len(colors)
    ns = sorted({r["n"] for r in rows})
    times = [scaled(r)[0] for r in rows if r["tool"] in colors]
    lo = 10 ** math.floor(math.log10(max(min(times), 1e-3)))
    hi = 10 ** math.ceil(math.log10(max(times)))
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, sans-serif" font-size="11">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>']

    def x(i, n):
        if len(ns) == 1:
            return i * pw + m + pw / 2
        return i * pw + m + (math.log10(n) - math.log10(ns[0])) / (math.log10(ns[-1]) - math.log10(ns[0])) * (pw - 40)

    def y(t):
        return m + ph - (math.log10(t) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

    for i, (rtt, transport) in enumerate(panels):
        s.append('<text x="%d" y="%d" font-weight="bold">RTT %d ms, %s</text>' % (i * pw + m, m - 15, rtt, "TLS" if transport == "tls" else "plain HTTP"))
        s.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (i * pw + m, m, pw - 40, ph))
        e = math.log10(lo)
        while e <= math.log10(hi) + 1e-9:
            t = 10 ** e
            s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (i * pw + m, i * pw + m + pw - 40, y(t), y(t)))
            if i == 0:
                s.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (m - 4, y(t) + 4, ("%g s" % t) if t >= 1 else ("%g ms" % (t * 1000))))
            e += 1
        for n in ns:
            s.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(i, n), m + ph + 14, n))
        for tool, color in colors.items():
            pts = sorted((r["n"], scaled(r)[0]) for r in rows if (r["rtt_ms"], r["transport"], r["tool"]) == (rtt, transport, tool))
            if pts:
                s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (color, " ".join("%.1f,%.1f" % (x(i, n), y(t)) for n, t in pts)))
                for n, t in pts:
                    s.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x(i, n), y(t), color))
    s.append('<text x="%d" y="%d">images (N), wall time (median; sequential peers scaled to N); log scales</text>' % (m, m + ph + 32))
    for j, (tool, color) in enumerate(colors.items()):
        yy = m + ph + 52 + 18 * j
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
    md = report(rows, machine, overhead)
    if splice is None:
        print(md)
        return
    svg = os.path.join(os.path.dirname(splice) or ".", "benchmarks-wan.svg")
    svg_chart(rows, svg)
    md += "\n![wall time against N across a network](benchmarks-wan.svg)\n"
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wan-notes.md")
    if os.path.exists(notes):
        md += "\n" + open(notes).read()
    section = "<!-- wan:begin (bench/run.sh --wan writes this section) -->\n" + md + "<!-- wan:end -->\n"
    kept = os.path.join(os.path.dirname(splice) or ".", "benchmarks-wan.md")
    with open(kept, "w") as f:
        f.write(section)
    put_section(splice, section)


if __name__ == "__main__":
    main(sys.argv[1:])
