//! `pullcheck-bench-report`: turns the results directory that `bench/run.sh`
//! fills into `benchmarks.md` (tables of medians with min–max spread, ratios to
//! pullcheck, requests per image, peak RSS, start-up, targets, the machine) and
//! `benchmarks.png` (wall time against N for each tool).
//!
//! ```text
//! pullcheck-bench-report --results DIR --markdown OUT.md --png OUT.png [--notes FILE]
//! ```
//!
//! The results directory holds `timings.tsv` (mode, n, tool, images timed,
//! hyperfine JSON path), `requests.tsv`, `rss.tsv`, `machine.tsv`, `load.txt`
//! and `hyperfine/startup.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plotters::prelude::*;

type Result<T> = std::result::Result<T, String>;

/// The tools, in table and legend order: (key, label, colour).
const TOOLS: &[(&str, &str, RGBColor)] = &[
    (
        "pullcheck-vela",
        "pullcheck check .vela.yml",
        RGBColor(0x1f, 0x77, 0xb4),
    ),
    (
        "pullcheck-args",
        "pullcheck check --image …",
        RGBColor(0x17, 0xbe, 0xcf),
    ),
    (
        "curl-floor",
        "curl: protocol floor",
        RGBColor(0x7f, 0x7f, 0x7f),
    ),
    (
        "skopeo-par8",
        "skopeo inspect --raw, xargs -P 8",
        RGBColor(0x2c, 0xa0, 0x2c),
    ),
    (
        "skopeo-seq",
        "skopeo inspect --raw, one at a time",
        RGBColor(0xd6, 0x27, 0x28),
    ),
    (
        "docker-seq",
        "docker manifest inspect, one at a time",
        RGBColor(0xff, 0x7f, 0x0e),
    ),
];
/// The baseline of the ratios.
const BASELINE: &str = "pullcheck-vela";
const MODES: &[(&str, &str)] = &[("token", "token auth"), ("anonymous", "no auth")];

fn label(tool: &str) -> &str {
    TOOLS
        .iter()
        .find(|(k, _, _)| *k == tool)
        .map_or(tool, |(_, l, _)| l)
}

/// One hyperfine measurement, in seconds, scaled to N when the tool was timed
/// over fewer images (`estimated`).
#[derive(Clone, Debug)]
struct Timing {
    median: f64,
    min: f64,
    max: f64,
    runs: usize,
    estimated: bool,
}

#[derive(Clone, Debug)]
struct Requests {
    images: u64,
    registry: u64,
    token: u64,
    by_method: String,
}

struct Results {
    /// (mode, n, tool) -> timing
    timings: BTreeMap<(String, u64, String), Timing>,
    requests: BTreeMap<(String, u64, String), Requests>,
    /// (mode, n, form) -> max RSS of each run, KiB
    rss: BTreeMap<(String, u64, String), Vec<u64>>,
    machine: Vec<(String, String)>,
    /// 1-minute load samples
    load: Vec<f64>,
    /// CPU used by processes outside the benchmark between two samples, as a
    /// share of one core
    other_cpu: Vec<f64>,
    /// CPU time taken by the hypervisor (steal) between two samples, as a
    /// share of all the machine's CPU time
    steal: Vec<f64>,
    startup: Option<Timing>,
    sizes: Vec<u64>,
}

fn tsv(path: &Path) -> Result<Vec<Vec<String>>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect())
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T> {
    s.trim()
        .parse()
        .map_err(|_| format!("{what}: not a number: {s:?}"))
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Reads a hyperfine `--export-json` file: the run times of its first command.
fn hyperfine(path: &Path, images: u64, n: u64) -> Result<Timing> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let times = json["results"][0]["times"]
        .as_array()
        .ok_or_else(|| format!("{}: no results[0].times", path.display()))?;
    let mut times: Vec<f64> = times.iter().filter_map(serde_json::Value::as_f64).collect();
    if times.is_empty() {
        return Err(format!("{}: no run times", path.display()));
    }
    times.sort_by(f64::total_cmp);
    let scale = if images > 0 && images < n {
        n as f64 / images as f64
    } else {
        1.0
    };
    Ok(Timing {
        median: median(&times) * scale,
        min: times[0] * scale,
        max: times[times.len() - 1] * scale,
        runs: times.len(),
        estimated: scale != 1.0,
    })
}

fn load(dir: &Path) -> Result<Results> {
    let mut timings = BTreeMap::new();
    let mut sizes = Vec::new();
    for row in tsv(&dir.join("timings.tsv"))? {
        let [mode, n, tool, images, json] = &row[..] else {
            return Err(format!("timings.tsv: bad row {row:?}"));
        };
        let n: u64 = num(n, "timings.tsv n")?;
        let images: u64 = num(images, "timings.tsv images")?;
        if !sizes.contains(&n) {
            sizes.push(n);
        }
        let t = hyperfine(&dir.join(json), images, n)?;
        timings.insert((mode.clone(), n, tool.clone()), t);
    }
    sizes.sort_unstable();

    let mut requests = BTreeMap::new();
    for row in tsv(&dir.join("requests.tsv"))? {
        let [mode, n, tool, images, registry, token, rest @ ..] = &row[..] else {
            return Err(format!("requests.tsv: bad row {row:?}"));
        };
        requests.insert(
            (mode.clone(), num(n, "requests.tsv n")?, tool.clone()),
            Requests {
                images: num(images, "requests.tsv images")?,
                registry: num(registry, "requests.tsv registry")?,
                token: num(token, "requests.tsv token")?,
                by_method: rest.first().cloned().unwrap_or_default(),
            },
        );
    }

    let mut rss: BTreeMap<_, Vec<u64>> = BTreeMap::new();
    for row in tsv(&dir.join("rss.tsv"))? {
        let [mode, n, form, _run, kib] = &row[..] else {
            return Err(format!("rss.tsv: bad row {row:?}"));
        };
        rss.entry((mode.clone(), num(n, "rss.tsv n")?, form.clone()))
            .or_default()
            .push(num(kib, "rss.tsv kib")?);
    }

    // machine.tsv has no header line.
    let machine: Vec<(String, String)> = std::fs::read_to_string(dir.join("machine.tsv"))
        .map_err(|e| format!("reading machine.tsv: {e}"))?
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();

    let load_txt = std::fs::read_to_string(dir.join("load.txt")).unwrap_or_default();
    let samples: Vec<Vec<f64>> = load_txt
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .collect();
    let steal = samples
        .windows(2)
        .filter_map(|w| {
            let (t0, s0) = (*w[0].get(5)?, *w[0].get(6)?);
            let (t1, s1) = (*w[1].get(5)?, *w[1].get(6)?);
            (t1 > t0).then(|| (s1 - s0) / (t1 - t0))
        })
        .collect();
    let load = samples.iter().filter_map(|s| s.get(1).copied()).collect();
    let clk_tck: f64 = machine
        .iter()
        .find(|(k, _)| k == "clk_tck")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(100.0);
    let other_cpu = samples
        .windows(2)
        .filter_map(|w| {
            let (t0, t1, ticks) = (*w[0].first()?, *w[1].first()?, *w[1].get(4)?);
            (t1 > t0).then(|| ticks / clk_tck / (t1 - t0))
        })
        .collect();

    let startup_path = dir.join("hyperfine/startup.json");
    let startup = if startup_path.exists() {
        Some(hyperfine(&startup_path, 1, 1)?)
    } else {
        None
    };
    Ok(Results {
        timings,
        requests,
        rss,
        machine,
        load,
        other_cpu,
        steal,
        startup,
        sizes,
    })
}

/// Seconds as a short human figure: `812 µs`, `23.4 ms`, `4.71 s`.
fn secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 0.1 {
        format!("{:.1} ms", s * 1e3)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 100.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.0} s")
    }
}

fn range(t: &Timing) -> String {
    // One unit for both ends, taken from the larger.
    let (div, unit) = if t.max < 1e-3 {
        (1e-6, "µs")
    } else if t.max < 1.0 {
        (1e-3, "ms")
    } else {
        (1.0, "s")
    };
    let prec = if t.max / div < 10.0 {
        2
    } else if t.max / div < 100.0 {
        1
    } else {
        0
    };
    format!("{:.*}–{:.*} {unit}", prec, t.min / div, prec, t.max / div)
}

fn ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

impl Results {
    fn machine(&self, key: &str) -> &str {
        self.machine
            .iter()
            .find(|(k, _)| k == key)
            .map_or("unknown", |(_, v)| v.as_str())
    }

    fn timing(&self, mode: &str, n: u64, tool: &str) -> Option<&Timing> {
        self.timings.get(&(mode.to_string(), n, tool.to_string()))
    }

    fn ratio(&self, mode: &str, n: u64, tool: &str) -> Option<f64> {
        let t = self.timing(mode, n, tool)?;
        let base = self.timing(mode, n, BASELINE)?;
        Some(t.median / base.median)
    }

    fn max_rss(&self, n: u64) -> Option<u64> {
        self.rss
            .iter()
            .filter(|((_, rn, _), _)| *rn == n)
            .flat_map(|(_, v)| v.iter().copied())
            .max()
    }
}

fn markdown(r: &Results, notes: Option<&str>) -> String {
    let mut md = String::new();
    let w = &mut md;
    let runs = r.machine("runs");
    let fast_runs = r.machine("fast_runs");
    let seq_max = r.machine("seq_max");
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "pullcheck runs at the start of every build, so its cost is paid on every build. \
         This page measures it against what users would otherwise script — `skopeo inspect` \
         and `docker manifest inspect`, one image at a time or 8 at a time — and against \
         the floor the protocol allows (one ping, one token, one `HEAD` per image, sent by \
         `curl`: one process for the ping, one for the token, one for all the `HEAD`s), on \
         real registries: Debian's `docker-registry` on loopback, with \
         token auth (the token server of `pullcheck-testkit`) and without auth, holding N \
         distinct images (OCI and Docker manifests and indexes, in turn).\n"
    );
    let _ = writeln!(
        w,
        "Generated by `bench/run.sh` on {} ({}; took {} s). Ratios are each tool's median \
         over pullcheck's median on the pipeline file (`pullcheck check .vela.yml`) at the \
         same N and mode; higher means pullcheck is faster.\n",
        r.machine("date"),
        r.machine("commit"),
        r.machine("duration_s"),
    );
    let _ = writeln!(w, "![wall time against N](benchmarks.png)\n");

    // ---- wall time
    let _ = writeln!(w, "## Wall time\n");
    let _ = writeln!(
        w,
        "Median of hyperfine runs ({runs} runs of each command; {fast_runs} for pullcheck and \
         the curl floor at N ≤ 100), with the min–max spread, and the ratio to pullcheck.\n"
    );
    let mut estimated = false;
    for (mode, mode_label) in MODES {
        if !r.timings.keys().any(|(m, _, _)| m == mode) {
            continue;
        }
        let _ = writeln!(w, "### {}\n", capitalise(mode_label));
        let _ = write!(w, "| tool |");
        for n in &r.sizes {
            let _ = write!(w, " N = {n} |");
        }
        let _ = writeln!(w);
        let _ = write!(w, "|---|");
        for _ in &r.sizes {
            let _ = write!(w, "---|");
        }
        let _ = writeln!(w);
        for (tool, tool_label, _) in TOOLS {
            let _ = write!(w, "| {tool_label} |");
            for &n in &r.sizes {
                match r.timing(mode, n, tool) {
                    Some(t) => {
                        let est = if t.estimated {
                            estimated = true;
                            " est.¹"
                        } else {
                            ""
                        };
                        let rat = match r.ratio(mode, n, tool) {
                            Some(x) if *tool != BASELINE => format!(", **{}**", ratio(x)),
                            _ => String::new(),
                        };
                        let _ = write!(w, " {}{est} ({}){rat} |", secs(t.median), range(t));
                    }
                    None => {
                        let _ = write!(w, " — |");
                    }
                }
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    }
    if estimated {
        let _ = writeln!(
            w,
            "¹ est.: to keep the whole run near 15 minutes, the sequential peers were timed \
             over the first {seq_max} of the N images, and their times (median and spread) \
             scaled by N/{seq_max}. Each image costs them the same separate process and the \
             same requests, so their time is linear in N (compare N = 10 and N = 100).\n"
        );
    }

    // ---- requests
    let _ = writeln!(w, "## Requests per image\n");
    let _ = writeln!(
        w,
        "Counted from the registry's access log (every request it served, with its \
         status) and the token server's log, over one run of each tool. Token requests are \
         counted apart from registry requests. On loopback every client first tries HTTPS \
         and falls back to plain HTTP; the registry answers that TLS hello with a bare 400 \
         outside its request handler, so those attempts are not in the counts.\n"
    );
    for (mode, mode_label) in MODES {
        if !r.requests.keys().any(|(m, _, _)| m == mode) {
            continue;
        }
        let _ = writeln!(w, "### {}\n", capitalise(mode_label));
        let _ = writeln!(
            w,
            "| N | tool | images | registry requests | per image | token requests | per image | registry requests by method and status |"
        );
        let _ = writeln!(w, "|---|---|---|---|---|---|---|---|");
        for &n in &r.sizes {
            for (tool, tool_label, _) in TOOLS {
                let Some(q) = r.requests.get(&(mode.to_string(), n, tool.to_string())) else {
                    continue;
                };
                let per = |x: u64| {
                    let v = x as f64 / q.images.max(1) as f64;
                    if v > 0.0 && v < 0.01 {
                        format!("{v:.3}")
                    } else {
                        format!("{v:.2}")
                    }
                };
                let mut by: Vec<_> = q
                    .by_method
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.replacen('_', " ", 1).replacen(':', " × ", 1))
                    .collect();
                by.sort();
                let by = by.join(", ");
                let _ = writeln!(
                    w,
                    "| {n} | {tool_label} | {} | {} | {} | {} | {} | {by} |",
                    q.images,
                    q.registry,
                    per(q.registry),
                    q.token,
                    per(q.token),
                );
            }
        }
        let _ = writeln!(w);
    }

    // ---- memory and start-up
    let _ = writeln!(w, "## Peak memory and start-up of pullcheck\n");
    let _ = writeln!(
        w,
        "Maximum resident set size from `/usr/bin/time -v`, 3 runs of each input form; the \
         table gives the largest and the median.\n"
    );
    let _ = writeln!(w, "| mode | N | form | max RSS, largest | median |");
    let _ = writeln!(w, "|---|---|---|---|---|");
    let rss_rows = MODES.iter().flat_map(|(mode, _)| {
        r.rss
            .iter()
            .filter(move |((m, _, _), _)| m == mode)
            .collect::<Vec<_>>()
    });
    for ((mode, n, form), v) in rss_rows {
        let mut v = v.clone();
        v.sort_unstable();
        let form = if form == "vela" {
            ".vela.yml"
        } else {
            "--image …"
        };
        let _ = writeln!(
            w,
            "| {mode} | {n} | {form} | {} | {} |",
            mib(*v.last().unwrap_or(&0)),
            mib(v[v.len() / 2])
        );
    }
    let _ = writeln!(w);
    if let Some(s) = &r.startup {
        let _ = writeln!(
            w,
            "Start-up, `pullcheck --version` (hyperfine, {} runs): median **{}** ({}).\n",
            s.runs,
            secs(s.median),
            range(s)
        );
    }

    // ---- targets
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(w, "| target | measured | |");
    let _ = writeln!(w, "|---|---|---|");
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };
    for (tool, want) in [("skopeo-seq", 30.0), ("skopeo-par8", 5.0)] {
        let target = format!(
            "N = 100, token auth: pullcheck ≥ {want:.0}× faster than {}",
            label(tool)
        );
        match r.ratio("token", 100, tool) {
            Some(x) => {
                let _ = writeln!(w, "| {target} | {} | {} |", ratio(x), verdict(x >= want));
            }
            None => {
                let _ = writeln!(w, "| {target} | not measured | |");
            }
        }
    }
    // pullcheck asks one token per 100 repositories (crates/registry `scope.rs`), so
    // the target's "one token request per registry" holds up to N = 100, and at
    // N = 1000 it asks ten, on purpose (bench/notes.md says why).
    let mut floor_ok = true;
    let mut batched_ok = true;
    let mut req_seen = false;
    let mut req_detail = Vec::new();
    for ((mode, n, tool), q) in &r.requests {
        if !tool.starts_with("pullcheck") {
            continue;
        }
        req_seen = true;
        let token_mode = mode == "token";
        let floor = u64::from(token_mode);
        let batched = if token_mode { n.div_ceil(100) } else { 0 };
        if q.registry != n + 1 || q.token != floor {
            floor_ok = false;
        }
        if q.registry != n + 1 || q.token != batched {
            batched_ok = false;
            req_detail.push(format!(
                "{} {mode} N={n}: {} registry + {} token",
                label(tool),
                q.registry,
                q.token
            ));
        }
    }
    if req_seen {
        let (measured, result) = if floor_ok {
            (
                "N + 1 registry requests (N `HEAD` + 1 ping) and 1 token request (token auth) \
                 or none (no auth), at every N, both input forms"
                    .to_string(),
                "met",
            )
        } else if batched_ok {
            (
                "N + 1 registry requests (N `HEAD` + 1 ping) at every N, both input forms; \
                 token requests: 1 up to N = 100, then one per 100 repositories (10 at \
                 N = 1000)"
                    .to_string(),
                "met up to N = 100; above, one token per 100 repositories by design (see below)",
            )
        } else {
            (req_detail.join("; "), "**missed**")
        };
        let _ = writeln!(
            w,
            "| requests: N `HEAD`s + one ping and one token request per registry | {measured} | {result} |"
        );
    }
    match r.max_rss(1000) {
        Some(kib) => {
            let _ = writeln!(
                w,
                "| peak RSS < 40 MiB at N = 1000 | {} (largest over modes and forms) | {} |",
                mib(kib),
                verdict(kib < 40 * 1024)
            );
        }
        None => {
            let _ = writeln!(
                w,
                "| peak RSS < 40 MiB at N = 1000 | not measured (no N = 1000 in this run) | |"
            );
        }
    }
    if let Some(s) = &r.startup {
        let _ = writeln!(
            w,
            "| `pullcheck --version` < 5 ms | {} (median) | {} |",
            secs(s.median),
            verdict(s.median < 5e-3)
        );
    }
    let _ = writeln!(w);

    if let Some(notes) = notes {
        let _ = writeln!(w, "{}\n", notes.trim_end());
    }

    // ---- machine
    let _ = writeln!(w, "## Machine\n");
    let load = if r.load.is_empty() {
        "not sampled".to_string()
    } else {
        let mut v = r.load.clone();
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        format!(
            "1-minute load average during the run, sampled every 5 s: first {:.2}, median {:.2}, mean {mean:.2}, max {:.2} ({} samples)",
            r.load[0],
            median(&v),
            v[v.len() - 1],
            v.len()
        )
    };
    for (key, name) in [
        ("nproc", "cores (`nproc`)"),
        ("cpu", "CPU"),
        ("memory", "memory"),
        ("kernel", "kernel"),
        ("os", "OS"),
    ] {
        let _ = writeln!(w, "- {name}: {}", r.machine(key));
    }
    let _ = writeln!(
        w,
        "- load before the run: {} (1, 5, 15 minutes)",
        r.machine("load_before")
    );
    let _ = writeln!(
        w,
        "- load: {load}. The load average counts the benchmark's own processes: the \
         registry, the token server and the clients (`xargs -P 8` runs 8 skopeo at once)."
    );
    if !r.other_cpu.is_empty() {
        let mut v = r.other_cpu.clone();
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let busy = v.iter().filter(|x| **x > 0.1).count();
        let _ = writeln!(
            w,
            "- CPU used by processes outside the benchmark (from `/proc/PID/stat` every 5 s): \
             mean {:.0}% of one core, max {:.0}%; above 10% in {busy} of {} intervals",
            mean * 100.0,
            v[v.len() - 1] * 100.0,
            v.len()
        );
    }
    if !r.steal.is_empty() {
        let mut v = r.steal.clone();
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let _ = writeln!(
            w,
            "- CPU steal (time the hypervisor gave to other guests, from `/proc/stat`): mean \
             {:.0}% of the machine's CPU time, median {:.0}%, max {:.0}% over a 5 s interval",
            mean * 100.0,
            median(&v) * 100.0,
            v[v.len() - 1] * 100.0
        );
    }
    let _ = writeln!(
        w,
        "- versions: {}; {}; {}; {}; {}; {}; {}",
        r.machine("pullcheck"),
        r.machine("skopeo"),
        r.machine("docker"),
        r.machine("registry"),
        r.machine("hyperfine"),
        r.machine("curl"),
        r.machine("rustc"),
    );
    let _ = writeln!(w);

    // ---- reproduce
    let _ = writeln!(w, "## Reproduce\n");
    let _ = writeln!(
        w,
        "On a Debian machine, as root (or with sudo), with Rust installed, from a clone of \
         the repository:\n\n\
         ```sh\n\
         bench/run.sh           # N = 10, 100, 1000 (about 10 minutes on 2 cores, after the build); rewrites docs/benchmarks.md and .png\n\
         bench/run.sh --quick   # N = 10, 100 only; results in target/bench/results\n\
         ```\n\n\
         The script installs what it needs with apt-get (`docker-registry`, `skopeo`, \
         `hyperfine`, `time`, `curl`, and `docker.io` if no docker CLI is installed), builds \
         pullcheck in release mode, and for each mode and N starts a fresh registry with \
         `pullcheck-testkit serve --push-many N`. Each tool gets one counted run (its \
         requests are read from the registry's access log and the token log; it also warms \
         the caches), then hyperfine runs it. The raw hyperfine JSON, the request counts and \
         the RSS samples are left in the results directory. See `bench/README.md` for the \
         options and what exactly each peer command is.\n"
    );
    md
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn chart(r: &Results, path: &Path) -> Result<()> {
    let fonts = [
        (FontStyle::Normal, dejavu::sans::regular()),
        (FontStyle::Bold, dejavu::sans::bold()),
    ];
    for (style, bytes) in fonts {
        plotters::style::register_font("sans-serif", style, bytes)
            .map_err(|_| "the embedded font could not be loaded".to_string())?;
    }
    let e = |e: DrawingAreaErrorKind<_>| format!("drawing {}: {e:?}", path.display());

    let modes: Vec<_> = MODES
        .iter()
        .filter(|(m, _)| r.timings.keys().any(|(tm, _, _)| tm == m))
        .collect();
    if modes.is_empty() {
        return Err("no timings to plot".into());
    }
    let (lo, hi) = r
        .timings
        .values()
        .fold((f64::INFINITY, 0f64), |(lo, hi), t| {
            (lo.min(t.min), hi.max(t.max))
        });
    let (y0, y1) = (lo * 0.7, hi * 1.6);
    let n_max = *r.sizes.last().unwrap_or(&1000) as f64;
    let n_min = *r.sizes.first().unwrap_or(&10) as f64;

    let root = BitMapBackend::new(path, (1500, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (title, body) = root.split_vertically(56);
    title
        .draw(&Text::new(
            "Checking N images in a registry: wall time against N (median, min–max bars; log–log)",
            (20, 18),
            ("sans-serif", 22).into_font().style(FontStyle::Bold),
        ))
        .map_err(e)?;
    let mut note = format!(
        "{} cores, {}, {}. Registry: Debian's docker-registry on loopback.",
        r.machine("nproc"),
        r.machine("cpu"),
        r.machine("date"),
    );
    if r.timings.values().any(|t| t.estimated) {
        let _ = write!(
            note,
            " Hollow points: timed over the first {} images and scaled to N.",
            r.machine("seq_max")
        );
    }
    title
        .draw(&Text::new(note, (20, 42), ("sans-serif", 15)))
        .map_err(e)?;
    let panels = body.split_evenly((1, modes.len()));
    for (panel, (mode, mode_label)) in panels.iter().zip(modes) {
        let mut chart = ChartBuilder::on(panel)
            .caption(capitalise(mode_label), ("sans-serif", 20))
            .margin(18)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(
                (n_min * 0.8..n_max * 1.25).log_scale(),
                (y0..y1).log_scale(),
            )
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("N (distinct images)")
            .y_desc("wall time")
            // Only the powers of ten; the minor grid lines stay unlabelled.
            .x_label_formatter(&|v| {
                let l = v.log10();
                if (l - l.round()).abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| secs(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for (tool, tool_label, colour) in TOOLS {
            let points: Vec<(f64, &Timing)> = r
                .sizes
                .iter()
                .filter_map(|&n| Some((n as f64, r.timing(mode, n, tool)?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(n, t)| (*n, t.median)),
                    colour.stroke_width(2),
                ))
                .map_err(e)?
                .label(*tool_label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(3))
                });
            chart
                .draw_series(points.iter().map(|(n, t)| {
                    ErrorBar::new_vertical(*n, t.min, t.median, t.max, colour.stroke_width(1), 8)
                }))
                .map_err(e)?;
            chart
                .draw_series(points.iter().map(|(n, t)| {
                    let style = if t.estimated {
                        WHITE.filled()
                    } else {
                        colour.filled()
                    };
                    Circle::new((*n, t.median), 5, style)
                }))
                .map_err(e)?;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|(n, t)| Circle::new((*n, t.median), 5, colour.stroke_width(2))),
                )
                .map_err(e)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

struct Args {
    results: PathBuf,
    markdown: PathBuf,
    png: PathBuf,
    notes: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut results = None;
    let mut markdown = None;
    let mut png = None;
    let mut notes = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--results" => results = Some(PathBuf::from(value()?)),
            "--markdown" => markdown = Some(PathBuf::from(value()?)),
            "--png" => png = Some(PathBuf::from(value()?)),
            "--notes" => notes = Some(PathBuf::from(value()?)),
            "-h" | "--help" => {
                return Err(
                    "usage: pullcheck-bench-report --results DIR --markdown OUT.md --png OUT.png [--notes FILE]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    let results = results.ok_or("--results is required")?;
    Ok(Args {
        markdown: markdown.unwrap_or_else(|| results.join("benchmarks.md")),
        png: png.unwrap_or_else(|| results.join("benchmarks.png")),
        results,
        notes,
    })
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let results = load(&args.results)?;
    let notes = match &args.notes {
        Some(p) => {
            Some(std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?)
        }
        None => None,
    };
    let md = markdown(&results, notes.as_deref());
    std::fs::write(&args.markdown, &md)
        .map_err(|e| format!("writing {}: {e}", args.markdown.display()))?;
    chart(&results, &args.png)?;
    // The wall-time tables and targets, for the console.
    let start = md.find("## Wall time").unwrap_or(0);
    let end = md.find("## Requests per image").unwrap_or(md.len());
    print!("{}", &md[start..end]);
    if let (Some(a), Some(b)) = (md.find("## Targets"), md.find("## Machine")) {
        print!("{}", &md[a..b]);
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pullcheck-bench-report: {e}");
            ExitCode::FAILURE
        }
    }
}
