//! The service's Prometheus metrics ([`Metrics`]), exported by `GET /metrics` in the
//! OpenMetrics text format (which Prometheus scrapes).
//!
//! No label takes unbounded values: no image, repository or namespace label; the
//! `registry` label is the registry host, capped at [`MAX_REGISTRY_LABELS`] distinct
//! values (the rest count as `other`); `route` is the matched route, never the raw path;
//! a registry's `code` is one of [`REGISTRY_CODES`]. Counters whose label values are
//! known in advance (checks and images by result and status, reload errors by file,
//! requests over a limit by limit) are exported at zero from the start.

use std::collections::BTreeSet;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// Distinct `registry` label values kept; later hosts are counted as `other`.
pub const MAX_REGISTRY_LABELS: usize = 64;

/// The `code` label values of `pullcheck_registry_requests_total`: the statuses a
/// registry sends that mean something to the check (OK, authentication, access, not
/// found, rate limit, server errors and gateways), `other` for any other status,
/// `error` for a request that got no HTTP answer, and `fallback` for the expected
/// failure of the `https://` first request (the ping, or the first manifest `HEAD` in
/// its place) of a registry allowed plain HTTP (it is then sent over `http://`,
/// counted on its own).
pub const REGISTRY_CODES: [&str; 12] = [
    "200", "401", "403", "404", "429", "500", "502", "503", "504", "other", "error", "fallback",
];

/// The bounded `code` label for a registry's answer: the status when it is one of
/// [`REGISTRY_CODES`], else `other`.
fn registry_code(code: &str) -> &'static str {
    REGISTRY_CODES
        .iter()
        .find(|known| **known == code)
        .copied()
        .unwrap_or("other")
}

/// A configuration file the service re-reads while it runs: the `file` label of
/// `pullcheck_config_reload_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadFile {
    /// `--api-token-file`.
    ApiTokenFile,
    /// `--tls-cert` and `--tls-key` (read as a pair).
    TlsCert,
}

impl ReloadFile {
    const ALL: [ReloadFile; 2] = [ReloadFile::ApiTokenFile, ReloadFile::TlsCert];

    fn as_str(self) -> &'static str {
        match self {
            ReloadFile::ApiTokenFile => "api_token_file",
            ReloadFile::TlsCert => "tls_cert",
        }
    }
}

/// A cost limit a request went over: the `limit` label of
/// `pullcheck_requests_over_limit_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitLabel {
    /// `--max-images`: image uses of a check.
    MaxImages,
    /// `--admission-max-containers`: containers and image volumes of a review.
    AdmissionMaxContainers,
    /// `--admission-max-body`: an admission review's body.
    AdmissionMaxBody,
    /// `--admission-max-reviews`: reviews in flight.
    AdmissionMaxReviews,
}

impl LimitLabel {
    const ALL: [LimitLabel; 4] = [
        LimitLabel::MaxImages,
        LimitLabel::AdmissionMaxContainers,
        LimitLabel::AdmissionMaxBody,
        LimitLabel::AdmissionMaxReviews,
    ];

    fn as_str(self) -> &'static str {
        match self {
            LimitLabel::MaxImages => "max_images",
            LimitLabel::AdmissionMaxContainers => "admission_max_containers",
            LimitLabel::AdmissionMaxBody => "admission_max_body",
            LimitLabel::AdmissionMaxReviews => "admission_max_reviews",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FileLabel {
    file: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

/// Buckets of the duration histograms, in seconds: 5 ms to 60 s.
const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    registry: String,
    kind: String,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    registry: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RegistryLabel {
    registry: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: &'static str,
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReviewLabels {
    operation: &'static str,
    kind: &'static str,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The result of one check, the `result` label of `pullcheck_checks_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckResult {
    /// Every checked image is present (the CLI's exit code 0).
    Pass,
    /// An image failed (exit code 1).
    Fail,
    /// Nothing failed, something is unverified (exit code 3).
    Unverified,
    /// The check could not run: bad input, a Kubernetes lookup that failed.
    Error,
    /// The check was dropped before its answer: the client went away, or the service
    /// stopped after `--shutdown-grace` with the check still running.
    Abandoned,
}

impl CheckResult {
    /// The result for a report's exit code (0, 1, 3; anything else is `error`).
    pub fn from_exit_code(code: i32) -> CheckResult {
        match code {
            pullcheck::report::EXIT_OK => CheckResult::Pass,
            pullcheck::report::EXIT_FAILED => CheckResult::Fail,
            pullcheck::report::EXIT_UNVERIFIED => CheckResult::Unverified,
            _ => CheckResult::Error,
        }
    }

    const ALL: [CheckResult; 5] = [
        CheckResult::Pass,
        CheckResult::Fail,
        CheckResult::Unverified,
        CheckResult::Error,
        CheckResult::Abandoned,
    ];

    fn as_str(self) -> &'static str {
        match self {
            CheckResult::Pass => "pass",
            CheckResult::Fail => "fail",
            CheckResult::Unverified => "unverified",
            CheckResult::Error => "error",
            CheckResult::Abandoned => "abandoned",
        }
    }
}

/// Every metric of the service, in one registry. Cheap to share (`Arc` it); every method
/// takes `&self`.
pub struct Metrics {
    registry: Registry,
    checks: Family<ResultLabel, Counter>,
    check_duration: Histogram,
    images: Family<StatusLabel, Counter>,
    in_flight: Gauge,
    registry_requests: Family<RequestLabels, Counter>,
    registry_duration: Family<KindLabels, Histogram>,
    token_cache_hits: Counter,
    answer_cache_hits: Counter,
    ratelimit_remaining: Family<RegistryLabel, Gauge>,
    http_requests: Family<HttpLabels, Counter>,
    admission_reviews: Family<ReviewLabels, Counter>,
    admission_duration: Histogram,
    reload_errors: Family<FileLabel, Counter>,
    over_limit: Family<LimitLabels, Counter>,
    registries_seen: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every metric under the `pullcheck_` prefix, with
    /// `pullcheck_build_info{version}` set to this crate's version.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("pullcheck");
        let checks = Family::<ResultLabel, Counter>::default();
        registry.register(
            "checks",
            "Checks, by result: pass, fail, unverified, error, abandoned (dropped before the answer)",
            checks.clone(),
        );
        let check_duration = duration_histogram();
        registry.register(
            "check_duration_seconds",
            "Time of a check, from the parsed request to the report",
            check_duration.clone(),
        );
        let images = Family::<StatusLabel, Counter>::default();
        registry.register(
            "images",
            "Images reported, by status (present, missing, no_access, denied, blocked, unreachable, invalid, deferred, skipped)",
            images.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "checks_in_flight",
            "Checks running now (at most the service's check limit)",
            in_flight.clone(),
        );
        let registry_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "registry_requests",
            "Requests sent to registries, by registry host, kind (ping, token, manifest, tags, blob) and code (200, 401, 403, 404, 429, 500, 502, 503, 504, other; error without an answer; fallback for the https first request of a registry allowed plain HTTP)",
            registry_requests.clone(),
        );
        let registry_duration = Family::<KindLabels, Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        registry.register(
            "registry_request_duration_seconds",
            "Time of a request to a registry, by registry host and kind",
            registry_duration.clone(),
        );
        let token_cache_hits = Counter::default();
        registry.register(
            "token_cache_hits",
            "Registry tokens taken from the cache instead of asked for",
            token_cache_hits.clone(),
        );
        let answer_cache_hits = Counter::default();
        registry.register(
            "answer_cache_hits",
            "Image answers taken from the present-answer cache",
            answer_cache_hits.clone(),
        );
        let ratelimit_remaining = Family::<RegistryLabel, Gauge>::default();
        registry.register(
            "registry_ratelimit_remaining",
            "The last ratelimit-remaining header a registry sent",
            ratelimit_remaining.clone(),
        );
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "Requests to this service, by route and HTTP code",
            http_requests.clone(),
        );
        let admission_reviews = Family::<ReviewLabels, Counter>::default();
        registry.register(
            "admission_reviews",
            "Admission reviews answered, by operation, kind (the reviewed kinds, else other) and decision (allowed, warned, denied, error)",
            admission_reviews.clone(),
        );
        let admission_duration = duration_histogram();
        registry.register(
            "admission_duration_seconds",
            "Time of an admission review, from the body read to the answer",
            admission_duration.clone(),
        );
        let reload_errors = Family::<FileLabel, Counter>::default();
        registry.register(
            "config_reload_errors",
            "Re-reads of a changed configuration file that failed (the last good content stays in use), by file: api_token_file, tls_cert",
            reload_errors.clone(),
        );
        let over_limit = Family::<LimitLabels, Counter>::default();
        registry.register(
            "requests_over_limit",
            "Requests refused for a cost limit, by limit: max_images, admission_max_containers, admission_max_body, admission_max_reviews",
            over_limit.clone(),
        );
        // Known label sets at zero, so that rates and alerts see them before the first event.
        for result in CheckResult::ALL {
            let _ = checks.get_or_create(&ResultLabel {
                result: result.as_str(),
            });
        }
        for status in pullcheck::report::Status::ALL {
            let _ = images.get_or_create(&StatusLabel {
                status: status.as_str(),
            });
        }
        for file in ReloadFile::ALL {
            let _ = reload_errors.get_or_create(&FileLabel {
                file: file.as_str(),
            });
        }
        for limit in LimitLabel::ALL {
            let _ = over_limit.get_or_create(&LimitLabels {
                limit: limit.as_str(),
            });
        }
        registry.register(
            "build",
            "The version of pullcheck serving",
            Info::new(VersionLabel {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
        Metrics {
            registry,
            checks,
            check_duration,
            images,
            in_flight,
            registry_requests,
            registry_duration,
            token_cache_hits,
            answer_cache_hits,
            ratelimit_remaining,
            http_requests,
            admission_reviews,
            admission_duration,
            reload_errors,
            over_limit,
            registries_seen: Mutex::new(BTreeSet::new()),
        }
    }

    /// The `registry` label for `host`: the host itself for the first
    /// [`MAX_REGISTRY_LABELS`] hosts seen, else `other`.
    fn registry_label(&self, host: &str) -> String {
        let Ok(mut seen) = self.registries_seen.lock() else {
            return "other".to_owned();
        };
        if seen.contains(host) {
            return host.to_owned();
        }
        if seen.len() < MAX_REGISTRY_LABELS {
            seen.insert(host.to_owned());
            return host.to_owned();
        }
        "other".to_owned()
    }

    /// One check's end: its result, duration in seconds, and the status of every image
    /// of its report (`pullcheck_images_total{status}`).
    pub fn check_done(&self, result: CheckResult, seconds: f64, statuses: &[&'static str]) {
        self.checks
            .get_or_create(&ResultLabel {
                result: result.as_str(),
            })
            .inc();
        // The duration histogram is of answered checks.
        if !matches!(result, CheckResult::Error | CheckResult::Abandoned) {
            self.check_duration.observe(seconds);
        }
        for status in statuses {
            self.images.get_or_create(&StatusLabel { status }).inc();
        }
    }

    /// A check started (`+1`) or ended (`-1`) running.
    pub fn checks_in_flight(&self, delta: i64) {
        self.in_flight.inc_by(delta);
    }

    /// The checks running now.
    pub fn in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    /// One request to a registry: `host` (`host[:port]`), `kind` (`ping`, `token`,
    /// `manifest`, `tags`, `blob`), `code` (the HTTP status, `error` without an answer,
    /// `fallback`; counted as `other` when not one of [`REGISTRY_CODES`]), and its time
    /// in seconds. For the registry client's request observer.
    pub fn registry_request(&self, host: &str, kind: &str, code: &str, seconds: f64) {
        let registry = self.registry_label(host);
        self.registry_requests
            .get_or_create(&RequestLabels {
                registry: registry.clone(),
                kind: kind.to_owned(),
                code: registry_code(code),
            })
            .inc();
        self.registry_duration
            .get_or_create(&KindLabels {
                registry,
                kind: kind.to_owned(),
            })
            .observe(seconds);
    }

    /// The `ratelimit-remaining` a registry sent (Docker Hub's header).
    pub fn ratelimit_remaining(&self, host: &str, remaining: u64) {
        self.ratelimit_remaining
            .get_or_create(&RegistryLabel {
                registry: self.registry_label(host),
            })
            .set(i64::try_from(remaining).unwrap_or(i64::MAX));
    }

    /// A registry token taken from the client's cache.
    pub fn token_cache_hit(&self) {
        self.token_cache_hits.inc();
    }

    /// An image answer taken from the answer cache (`--cache-present`).
    pub fn answer_cache_hit(&self) {
        self.answer_cache_hits.inc();
    }

    /// One request to this service: the matched `route` (a fixed string) and the
    /// answer's code.
    pub fn http_request(&self, route: &'static str, code: u16) {
        self.http_requests
            .get_or_create(&HttpLabels { route, code })
            .inc();
    }

    /// One admission review answered: its `operation` (`CREATE`, `UPDATE`, `DELETE`,
    /// `CONNECT`, `other`), `kind` (a reviewed kind or `other`), `decision` (`allowed`,
    /// `warned`, `denied`, `error`) and time in seconds (not observed for `error`).
    pub fn admission_review(
        &self,
        operation: &'static str,
        kind: &'static str,
        decision: &'static str,
        seconds: f64,
    ) {
        self.admission_reviews
            .get_or_create(&ReviewLabels {
                operation,
                kind,
                decision,
            })
            .inc();
        if decision != "error" {
            self.admission_duration.observe(seconds);
        }
    }

    /// A changed configuration file that could not be used: the last good content stays.
    pub fn reload_error(&self, file: ReloadFile) {
        self.reload_errors
            .get_or_create(&FileLabel {
                file: file.as_str(),
            })
            .inc();
    }

    /// A request refused for a cost limit.
    pub fn over_limit(&self, limit: LimitLabel) {
        self.over_limit
            .get_or_create(&LimitLabels {
                limit: limit.as_str(),
            })
            .inc();
    }

    /// Every metric in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry client's request observer ([`pullcheck::registry::Observer`]): every
/// request the shared client sends, and every token it reuses, counted in
/// [`Metrics`]. It sees hosts, request kinds, status codes and times; never a URL
/// query, a header value or a secret.
pub struct RegistryObserver(pub std::sync::Arc<Metrics>);

impl pullcheck::registry::Observer for RegistryObserver {
    fn request(&self, event: &pullcheck::registry::RequestEvent<'_>) {
        let code = match event.code {
            Some(c) => c.to_string(),
            None if event.falls_back_to_http => "fallback".to_owned(),
            None => "error".to_owned(),
        };
        self.0.registry_request(
            event.host,
            event.kind.as_str(),
            &code,
            event.duration.as_secs_f64(),
        );
        if let Some(remaining) = event.ratelimit_remaining {
            self.0.ratelimit_remaining(event.host, remaining);
        }
    }

    fn token_cache_hit(&self, _host: &str) {
        self.0.token_cache_hit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_exported_with_bounded_labels() {
        let m = Metrics::new();
        m.check_done(CheckResult::Fail, 0.2, &["present", "missing"]);
        m.registry_request("127.0.0.1:5000", "manifest", "200", 0.01);
        m.registry_request("127.0.0.1:5000", "token", "error", 0.5);
        m.ratelimit_remaining("127.0.0.1:5000", 99);
        m.token_cache_hit();
        m.answer_cache_hit();
        m.http_request("/v1/checks", 200);
        m.checks_in_flight(1);
        m.checks_in_flight(-1);
        let text = m.encode();
        for line in [
            "pullcheck_checks_total{result=\"fail\"} 1",
            "pullcheck_images_total{status=\"missing\"} 1",
            "pullcheck_check_duration_seconds_count 1",
            "pullcheck_registry_requests_total{registry=\"127.0.0.1:5000\",kind=\"manifest\",code=\"200\"} 1",
            "pullcheck_registry_request_duration_seconds_count{registry=\"127.0.0.1:5000\",kind=\"token\"} 1",
            "pullcheck_registry_ratelimit_remaining{registry=\"127.0.0.1:5000\"} 99",
            "pullcheck_token_cache_hits_total 1",
            "pullcheck_answer_cache_hits_total 1",
            "pullcheck_http_requests_total{route=\"/v1/checks\",code=\"200\"} 1",
            "pullcheck_checks_in_flight 0",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        assert!(text.contains("pullcheck_build_info{version=\""), "{text}");
    }

    #[test]
    fn registry_labels_are_capped() {
        let m = Metrics::new();
        for i in 0..MAX_REGISTRY_LABELS + 10 {
            m.registry_request(&format!("r{i}.example"), "ping", "200", 0.0);
        }
        let text = m.encode();
        assert!(text.contains("registry=\"other\""), "{text}");
        assert!(!text.contains(&format!("r{}.example", MAX_REGISTRY_LABELS + 1)));
    }
}
