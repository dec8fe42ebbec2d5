//! `POST /v1/checks`: the request body ([`CheckRequest`]), its translation into the
//! library's inputs, and the answer: the CLI's JSON report plus `exit_code`, or
//! `{"error": {"message", "line", "column"}}` (with `refusal` when Vela refuses the pipeline).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pullcheck::credentials::PullSecret;
use pullcheck::registry::Platform;
use pullcheck_kube::TemplateSource;
use pullcheck_sources::{Input, InputKind, NamedText, SourceError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::{Caller, namespace_allowed};
use crate::metrics::CheckResult;

/// The body of `POST /v1/checks`. At most one of `pipeline`, `build` and `manifests`,
/// and `images` beside it or alone (at least one of the four); every other field is
/// optional. Unknown fields are errors. Its `Debug`
/// shows which fields are set, never their content (pull secrets, a build's token).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The text of a `.vela.yml` or a compiled build's JSON (or Kubernetes manifests),
    /// detected as the CLI detects files.
    pub pipeline: Option<String>,
    /// A compiled Vela `Build` object. Its `token` field, if any, is dropped unread.
    pub build: Option<serde_json::Map<String, Value>>,
    /// Images to check, as `--image` arguments: alone, or beside `build` or `pipeline`
    /// for what the build Pod pulls that is not one of its containers (the Vela
    /// worker's outputs container), checked in the same way and reported under each
    /// image's `name`.
    pub images: Option<Vec<ImageArg>>,
    /// Kubernetes manifests, multi-document YAML.
    pub manifests: Option<String>,
    /// The name origins and errors give the input; default `request`.
    pub file_name: Option<String>,
    /// The build namespace: the pull secrets are read from the cluster, as `--namespace`.
    pub namespace: Option<String>,
    /// A PipelinePodsTemplate in `namespace`, as `--pods-template`.
    pub pods_template: Option<String>,
    /// Secret objects (JSON), as `--pull-secret` files.
    pub pull_secrets: Option<Vec<Value>>,
    /// As `--include-on-start`.
    #[serde(default)]
    pub include_on_start: bool,
    /// As `--platform`: `os/arch[/variant]`.
    pub platform: Option<String>,
    /// As `--runtime`: `docker` or `kubernetes`; default `kubernetes` with `namespace`
    /// or `pods_template`, else `docker`. On `kubernetes`, a pipeline's placeholder image
    /// is checked too.
    pub runtime: Option<String>,
    /// As `--placeholder-image`; default `docker.io/kubernetes/pause:latest`.
    pub placeholder_image: Option<String>,
    /// This check's deadline in seconds, at least 0.001, capped by `--deadline`.
    pub deadline_seconds: Option<f64>,
    /// As `--allow-empty`: inputs that hold no image get an empty report (exit code 0)
    /// instead of a 400 that says nothing was checked.
    #[serde(default)]
    pub allow_empty: bool,
}

impl std::fmt::Debug for CheckRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckRequest")
            .field("pipeline", &self.pipeline.as_ref().map(String::len))
            .field("build", &self.build.is_some())
            .field("images", &self.images.as_ref().map(Vec::len))
            .field("manifests", &self.manifests.as_ref().map(String::len))
            .field("namespace", &self.namespace)
            .field("pods_template", &self.pods_template)
            .field("pull_secrets", &self.pull_secrets.as_ref().map(Vec::len))
            .field("include_on_start", &self.include_on_start)
            .field("platform", &self.platform)
            .field("runtime", &self.runtime)
            .field("placeholder_image", &self.placeholder_image)
            .field("deadline_seconds", &self.deadline_seconds)
            .field("allow_empty", &self.allow_empty)
            .finish_non_exhaustive()
    }
}

/// One image of [`CheckRequest::images`]: a JSON object with `reference` and optionally
/// `policy` and `name` (an array in its place is an error, not read field by field).
#[derive(Debug)]
pub struct ImageArg {
    /// The reference, as written.
    pub reference: String,
    /// The pull policy, as `--image REF=POLICY` takes it; default `always`.
    pub policy: Option<String>,
    /// The name of the container that pulls it, as the report's origin `name` (origin
    /// kind `image`), such as `outputs`; default the reference.
    pub name: Option<String>,
}

/// What `images[]` expects, in errors.
const IMAGE_ARG: &str = "an object with \"reference\"";

impl<'de> Deserialize<'de> for ImageArg {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ImageArg, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ImageArg;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(IMAGE_ARG)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ImageArg, A::Error> {
                use serde::de::Error as _;
                let (mut reference, mut policy, mut name) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "reference" if reference.is_some() => {
                            return Err(A::Error::duplicate_field("reference"));
                        }
                        "policy" if policy.is_some() => {
                            return Err(A::Error::duplicate_field("policy"));
                        }
                        "name" if name.is_some() => {
                            return Err(A::Error::duplicate_field("name"));
                        }
                        "reference" => reference = Some(map.next_value()?),
                        "policy" => policy = Some(map.next_value::<Option<String>>()?),
                        "name" => name = Some(map.next_value::<Option<String>>()?),
                        other => {
                            return Err(A::Error::unknown_field(
                                other,
                                &["reference", "policy", "name"],
                            ));
                        }
                    }
                }
                let reference = reference.ok_or_else(|| A::Error::missing_field("reference"))?;
                Ok(ImageArg {
                    reference,
                    policy: policy.flatten(),
                    name: name.flatten(),
                })
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// What each field of [`CheckRequest`] expects, in JSON's words, for errors.
fn check_field(path: &str) -> Option<&'static str> {
    Some(match path {
        "pipeline" | "manifests" | "file_name" | "namespace" | "pods_template" | "platform"
        | "runtime" | "placeholder_image" | "images[].reference" | "images[].policy"
        | "images[].name" => "a string",
        "build" => "an object (a compiled Vela build)",
        "images" => "an array of objects with \"reference\"",
        "images[]" => IMAGE_ARG,
        "pull_secrets" => "an array of Secret objects",
        "include_on_start" | "allow_empty" => "true or false",
        "deadline_seconds" => "a number (seconds)",
        _ => return None,
    })
}

/// An answer other than a report: a status and `{"error": {...}}`.
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
    line: Option<usize>,
    column: Option<usize>,
    retry_after: Option<u64>,
    /// The limit gone over, and the front end's name of its setting.
    limit: Option<Box<(Limit, &'static str)>>,
    /// Why Vela's compiler refuses the pipeline, when it does: `{"refusal": {"kind", ...}}`.
    refusal: Option<Box<pullcheck::input::Refusal>>,
    /// A request's error as data ([`pullcheck_sources::RequestError`]): `kind`, the
    /// request `field` it is about, and its facts, merged into `error`
    /// ([`crate::render::request_error`]).
    pub(crate) facts: Option<Box<serde_json::Map<String, Value>>>,
}

/// A cost limit a request went over: `{"limit", "count", "setting", "flag"}` in its
/// error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    /// The setting (`max_images`); its name in the front end's words is the JSON `flag`
    /// ([`crate::ServeOptions::setting_name`]).
    pub setting: crate::ServeSetting,
    /// Its value.
    pub limit: usize,
    /// What the request had, when it was counted.
    pub count: Option<usize>,
}

impl ApiError {
    /// An error without a position.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            line: None,
            column: None,
            retry_after: None,
            limit: None,
            refusal: None,
            facts: None,
        }
    }

    /// 413 for a request over a cost limit: the message names the count, the limit and
    /// its setting (by `name`, the front end's); the body has them as `count`, `limit`,
    /// `setting` (snake_case) and `flag` (`name`'s).
    pub(crate) fn over_limit(
        what: &str,
        limit: Limit,
        name: fn(crate::ServeSetting) -> &'static str,
    ) -> ApiError {
        // Without a count (a body sent without Content-Length, cut as it is read):
        // more than the limit.
        let count = limit
            .count
            .map(|c| format!("{c} {what}"))
            .unwrap_or_else(|| format!("more than {} {what}", limit.limit));
        // The API server cannot split a review; a `/v1/checks` caller can split its
        // request.
        let remedy = match limit.setting {
            crate::ServeSetting::AdmissionMaxBody => "raise the limit",
            _ => "split the request or raise the limit",
        };
        let mut e = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "{count}: over the limit of {} ({}); {remedy}",
                limit.limit,
                name(limit.setting)
            ),
        );
        e.limit = Some(Box::new((limit, name(limit.setting))));
        e
    }

    pub(crate) fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// A 400 of the request's own: `message`, with `kind` (snake_case) and the request
    /// `field` it is about (a path such as `images[0].reference`) as `error` facts.
    pub(crate) fn bad_field(kind: &str, field: &str, message: impl Into<String>) -> ApiError {
        ApiError::bad(message).with_facts(json!({"kind": kind, "field": field}))
    }

    /// The error with `facts` (a JSON object) merged into its `error` facts.
    pub(crate) fn with_facts(mut self, facts: Value) -> ApiError {
        if let Value::Object(facts) = facts {
            self.facts
                .get_or_insert_with(Default::default)
                .extend(facts);
        }
        self
    }

    fn at(mut self, line: Option<usize>, column: Option<usize>) -> ApiError {
        self.line = line;
        self.column = column;
        self
    }
}

impl From<SourceError> for ApiError {
    /// 400 with the message and position; a pipeline Vela's compiler refuses keeps its
    /// [`pullcheck::input::Refusal`] (JSON `refusal`).
    fn from(e: SourceError) -> ApiError {
        let mut error = ApiError::bad(e.to_string()).at(e.line, e.column);
        error.refusal = e.refusal;
        error
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"message": self.message});
        for (key, value) in self.facts.map(|f| *f).into_iter().flatten() {
            error[key] = value;
        }
        if let Some(line) = self.line {
            error["line"] = json!(line);
        }
        if let Some(column) = self.column {
            error["column"] = json!(column);
        }
        if let Some(refusal) = &self.refusal {
            error["refusal"] = json!(refusal);
        }
        if let Some(limited) = self.limit {
            let (limit, flag) = *limited;
            error["limit"] = json!(limit.limit);
            error["setting"] = json!(limit.setting);
            error["flag"] = json!(flag);
            if let Some(count) = limit.count {
                error["count"] = json!(count);
            }
        }
        let mut response = (self.status, axum::Json(json!({ "error": error }))).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// Whether reading a body failed on its size limit (`--max-body`), as opposed to the
/// connection.
pub(crate) fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether the content type is JSON (`application/json`, parameters allowed).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Keeps the in-flight gauge right however the handler ends (answered, or dropped when
/// the client went away).
struct InFlight<'a>(&'a crate::metrics::Metrics);

impl<'a> InFlight<'a> {
    fn new(metrics: &'a crate::metrics::Metrics) -> InFlight<'a> {
        metrics.checks_in_flight(1);
        InFlight(metrics)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.checks_in_flight(-1);
    }
}

/// Counts (`pullcheck_checks_total{result="abandoned"}`) and logs a check whose future
/// is dropped before it answers: the client went away, or the service stopped after
/// `--shutdown-grace` with the check still running.
struct Unanswered<'a> {
    metrics: &'a crate::metrics::Metrics,
    started: Instant,
    answered: bool,
    /// The request's span (its id, method and path), which is no longer entered when
    /// the handler's future is dropped.
    span: tracing::Span,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let _entered = self.span.enter();
            let elapsed = self.started.elapsed();
            self.metrics
                .check_done(CheckResult::Abandoned, elapsed.as_secs_f64(), &[]);
            tracing::warn!(
                elapsed_ms = elapsed.as_millis() as u64,
                "check abandoned before its answer: the client went away or the service \
                 shut down"
            );
        }
    }
}

/// `POST /v1/checks`. The router's layers have already answered a missing token (401),
/// a content type other than JSON (415), a body over `--max-body` (413) or too slow
/// (408). Checks in this order: content type (415), a free check slot (503), the body,
/// the request (400), the namespace (403); then
/// runs the check in this future (nothing is spawned: a client that goes away drops it,
/// and the check with it).
pub async fn post_check(
    State(state): State<Arc<AppState>>,
    caller: Option<axum::Extension<Caller>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if !is_json(&headers) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON: Content-Type: application/json",
        )
        .into_response();
    }
    let Ok(_permit) = state.checks.clone().try_acquire_owned() else {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} checks are in flight ({}); try again",
                state.max_checks,
                state.name(crate::ServeSetting::MaxChecks)
            ),
        );
        e.retry_after = Some(1);
        return e.into_response();
    };
    let _in_flight = InFlight::new(&state.metrics);
    // The router's body reader (`body::read_body`) has read the body whole, under
    // --body-read-timeout and --max-body-reads, before this slot was taken: this reads
    // bytes already in memory.
    let body: Bytes = match axum::body::to_bytes(body, state.max_body).await {
        Ok(b) => b,
        Err(e) if is_length_limit(&e) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the body is over {} ({} bytes)",
                    state.name(crate::ServeSetting::MaxBody),
                    state.max_body
                ),
            )
            .into_response();
        }
        Err(e) => return ApiError::bad(format!("cannot read the body: {e}")).into_response(),
    };
    let caller = caller.map(|c| c.0).unwrap_or_default();
    let started = Instant::now();
    let mut unanswered = Unanswered {
        metrics: &state.metrics,
        started,
        answered: false,
        span: tracing::Span::current(),
    };
    let result = check(&state, &caller, &body).await;
    unanswered.answered = true;
    match result {
        Ok((mut report, code)) => {
            cap_warnings(&mut report.warnings);
            let statuses: Vec<&'static str> =
                report.images.iter().map(|i| i.status.as_str()).collect();
            state.metrics.check_done(
                CheckResult::from_exit_code(code),
                started.elapsed().as_secs_f64(),
                &statuses,
            );
            for _ in report.images.iter().filter(|i| i.cached) {
                state.metrics.answer_cache_hit();
            }
            // The CLI's JSON, in its field order, then `exit_code`.
            let answer = Answer {
                report: &report,
                exit_code: code,
            };
            (StatusCode::OK, axum::Json(answer)).into_response()
        }
        Err(e) => {
            // A caller's bad request is not a failed check: only the service's own
            // failures (5xx) count as `error`; 4xx show in pullcheck_http_requests_total.
            if e.status.is_server_error() {
                state.metrics.check_done(CheckResult::Error, 0.0, &[]);
            }
            e.into_response()
        }
    }
}

/// Most warnings an answer lists; the rest are counted in a last one. The inputs can hold
/// a warning per ignored YAML document or skipped object, many more than they hold uses.
pub const MAX_ANSWER_WARNINGS: usize = 100;

/// `warnings` cut to [`MAX_ANSWER_WARNINGS`], the last one saying how many were left out.
fn cap_warnings(warnings: &mut Vec<String>) {
    if warnings.len() <= MAX_ANSWER_WARNINGS {
        return;
    }
    let left = warnings.len() - (MAX_ANSWER_WARNINGS - 1);
    warnings.truncate(MAX_ANSWER_WARNINGS - 1);
    warnings.push(format!("… and {left} more warnings, not shown"));
}

/// The 200 answer: the report as `pullcheck check --format json` prints it, plus the
/// exit code the CLI would exit with.
#[derive(serde::Serialize)]
struct Answer<'a> {
    #[serde(flatten)]
    report: &'a pullcheck::report::Report,
    exit_code: i32,
}

/// The body's request, and the library's [`pullcheck_sources::CheckRequest`] filled
/// from it. A 413 already here when `images` alone holds more than `--max-images`.
fn parse_request(
    state: &AppState,
    body: &[u8],
) -> Result<pullcheck_sources::CheckRequest, ApiError> {
    let request: CheckRequest = crate::decode::object(body, check_field).map_err(|e| {
        ApiError::bad(e.message)
            .at(e.line, e.column)
            .with_facts(json!({"kind": e.kind.as_str(), "field": e.field}))
    })?;
    if let Some(images) = &request.images {
        check_image_count(state, images.len())?;
    }
    let texts = [
        request.pipeline.is_some(),
        request.build.is_some(),
        request.manifests.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if texts > 1 || (texts == 0 && request.images.is_none()) {
        // `field`: the first of the texts given, else the one field that would do.
        let field = [
            (request.pipeline.is_some(), "pipeline"),
            (request.build.is_some(), "build"),
            (request.manifests.is_some(), "manifests"),
        ]
        .into_iter()
        .find_map(|(given, f)| given.then_some(f))
        .unwrap_or("images");
        return Err(ApiError::bad_field(
            "inputs",
            field,
            format!(
                "give one of `pipeline`, `build` and `manifests` ({texts} given), or `images` \
                 alone; `images` may go beside any one of them"
            ),
        ));
    }
    let name = request.file_name.unwrap_or_else(|| "request".to_owned());
    let mut inputs = Vec::new();
    if let Some(text) = request.pipeline {
        inputs.push(Input {
            text: NamedText {
                name: name.clone(),
                text,
            },
            kind: None,
        });
    }
    if let Some(text) = request.manifests {
        inputs.push(Input {
            text: NamedText {
                name: name.clone(),
                text,
            },
            kind: Some(InputKind::Manifests),
        });
    }
    if let Some(mut build) = request.build {
        // The worker's build token: never read, never echoed. encoding/json fills
        // `Build.Token` from any key equal to `token` under Unicode case folding
        // (`TOKEN`, `tOkEn`, `to\u{212a}en` with the Kelvin sign), so every such key goes.
        build.retain(|key, _| !pullcheck::input::folds_equal("token", key));
        let text = serde_json::to_string_pretty(&Value::Object(build))
            .map_err(|e| ApiError::bad_field("input", "build", format!("`build`: {e}")))?;
        inputs.push(Input {
            text: NamedText {
                name: name.clone(),
                text,
            },
            kind: Some(InputKind::Build),
        });
    }
    let mut images = Vec::new();
    for (i, image) in request.images.iter().flatten().enumerate() {
        // The reference is taken as it is: unlike `--image REF=POLICY`, an `=` in it is
        // part of the reference (which then does not parse: `invalid`), never a policy.
        if image.reference.is_empty() {
            return Err(ApiError::bad_field(
                "empty",
                &format!("images[{i}].reference"),
                format!("images[{i}].reference is empty; expected an image reference"),
            ));
        }
        // The policy as `--image REF=POLICY` reads it: an unknown or empty one is an
        // `unknown_pull_policy` row, as in the CLI.
        let mut image_use =
            pullcheck::input::image_policy_use(&image.reference, image.policy.as_deref());
        if let Some(name) = &image.name {
            if name.is_empty() {
                return Err(ApiError::bad_field(
                    "empty",
                    &format!("images[{i}].name"),
                    format!("images[{i}].name is empty; give the container's name or leave it out"),
                ));
            }
            image_use.origin.name.clone_from(name);
        }
        images.push(image_use);
    }
    let mut pull_secrets = Vec::new();
    for (i, secret) in request.pull_secrets.iter().flatten().enumerate() {
        let text = secret.to_string();
        pull_secrets.extend(
            PullSecret::parse_manifests(&format!("pull_secrets[{i}]"), &text).map_err(|e| {
                ApiError::bad_field("pull_secret", &format!("pull_secrets[{i}]"), e.to_string())
            })?,
        );
    }
    let platform =
        match &request.platform {
            Some(p) => Some(Platform::parse(p).map_err(|e| {
                ApiError::bad_field("platform", "platform", format!("platform: {e}"))
            })?),
            None => None,
        };
    let deadline = match request.deadline_seconds {
        // Below a millisecond no request could be answered: every image would be
        // `unreachable` for a reason the caller gave.
        Some(s) if s.is_finite() && s > 0.0 && s < 0.001 => {
            return Err(ApiError::bad_field(
                "deadline",
                "deadline_seconds",
                format!("deadline_seconds must be at least 0.001 (one millisecond), not {s}"),
            ));
        }
        Some(s) if s.is_finite() && s > 0.0 => {
            Duration::try_from_secs_f64(s).map_or(state.deadline, |d| d.min(state.deadline))
        }
        Some(s) => {
            return Err(ApiError::bad_field(
                "deadline",
                "deadline_seconds",
                format!("deadline_seconds must be a positive number of seconds, not {s}"),
            ));
        }
        None => state.deadline,
    };
    let runtime = match &request.runtime {
        Some(r) => Some(
            pullcheck_sources::Runtime::parse(r)
                .map_err(|e| ApiError::bad_field("runtime", "runtime", format!("runtime: {e}")))?,
        ),
        None => None,
    };
    Ok(pullcheck_sources::CheckRequest {
        inputs,
        images,
        pull_secrets,
        namespace: request.namespace,
        template: match request.pods_template {
            Some(name) => TemplateSource::Name(name),
            None => TemplateSource::None,
        },
        runtime: runtime.or(state.runtime),
        placeholder_image: request
            .placeholder_image
            .or_else(|| state.placeholder_image.clone()),
        platform,
        deadline,
        // Once the inputs are read.
        deadline_start: None,
        include_on_start: request.include_on_start,
        allow_empty: request.allow_empty,
        // The service's kubeconfig namespace is not a build namespace: a pods template
        // needs `namespace` (`RequestError::TemplateWithoutNamespace`).
        cluster_namespace: false,
        setting_name: crate::render::setting,
    })
}

/// 413 when a request holds more image uses than `--max-images`, counted as read (an
/// image used in three steps, or a step reached through an alias from ten stages, counts
/// each time: each use is planned and reported), before anything is planned or asked.
fn check_image_count(state: &AppState, count: usize) -> Result<(), ApiError> {
    if count <= state.max_images {
        return Ok(());
    }
    state
        .metrics
        .over_limit(crate::metrics::LimitLabel::MaxImages);
    Err(ApiError::over_limit(
        "image uses",
        Limit {
            setting: crate::ServeSetting::MaxImages,
            limit: state.max_images,
            count: Some(count),
        },
        state.setting_name,
    ))
}

async fn check(
    state: &AppState,
    caller: &Caller,
    body: &[u8],
) -> Result<(pullcheck::report::Report, i32), ApiError> {
    let request = parse_request(state, body)?;
    let namespace = request.namespace.clone();
    // Whose placeholder a bad one is: the request's field, or the service's option.
    let placeholder_given = request.placeholder_image != state.placeholder_image;
    // The request's own rules (an empty namespace, a name that is no path segment)
    // before the namespace is judged.
    request
        .validate()
        .map_err(|e| crate::render::request_error(e, placeholder_given))?;
    if let Some(ns) = &namespace
        && !namespace_allowed(ns, &state.allow_namespaces, caller)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("namespace {ns:?} is not allowed for this caller"),
        )
        .with_facts(json!({"kind": "namespace_not_allowed", "field": "namespace"})));
    }
    // The field of the request's one text, for an `input` error's `field`.
    let text_field = request.inputs.first().map(|i| match i.kind {
        None | Some(InputKind::Pipeline) => "pipeline",
        Some(InputKind::Manifests) => "manifests",
        Some(InputKind::Build) => "build",
    });
    let prepared = state
        .parse(false, move || request.read())
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the request could not be read: {e}"),
            )
        })?
        .map_err(|e| {
            let input = matches!(e, pullcheck_sources::RequestError::Inputs(_));
            let e = crate::render::request_error(e, placeholder_given);
            match text_field {
                Some(field) if input => e.with_facts(json!({"field": field})),
                _ => e,
            }
        })?;
    // Counted as read, before anything is gathered, planned or asked.
    check_image_count(state, prepared.use_count())?;
    let cluster = match &namespace {
        Some(_) => match &state.cluster {
            Ok(c) => Some(c),
            Err(e) => {
                return Err(ApiError::bad_field(
                    "no_kubernetes_api",
                    "namespace",
                    format!("`namespace` needs the Kubernetes API, which is not configured: {e}"),
                ));
            }
        },
        None => None,
    };
    let ready = prepared
        .gather_within_deadline(cluster)
        .await
        .map_err(|e| crate::render::request_error(e, placeholder_given))?;
    let report = crate::render::report(crate::check::run(state, ready).await, state.setting_name);
    let code = report.exit_code();
    Ok((report, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 413's message, golden: a body without `Content-Length` is "more than" the
    /// limit, and only a `/v1/checks` caller is told to split its request (an API
    /// server cannot split a review) (rev23q finding 13).
    #[test]
    fn over_limit_messages_golden() {
        let message = |setting, count| {
            ApiError::over_limit(
                "bytes of body",
                Limit {
                    setting,
                    limit: 8_388_608,
                    count,
                },
                crate::plain_setting_name,
            )
            .message
        };
        assert_eq!(
            message(crate::ServeSetting::MaxBody, None),
            "more than 8388608 bytes of body: over the limit of 8388608 (max_body); split \
             the request or raise the limit"
        );
        assert_eq!(
            message(crate::ServeSetting::AdmissionMaxBody, Some(9_000_000)),
            "9000000 bytes of body: over the limit of 8388608 (admission_max_body); raise \
             the limit"
        );
    }
}
