//! `POST /v1/admission`: a Kubernetes validating admission webhook that asks the
//! registries whether the images of a Pod or a workload's pod template can be pulled,
//! before the API server stores the object.
//!
//! The wire shape is the `admission.k8s.io/v1` `AdmissionReview` of the Kubernetes API
//! reference ("kube-apiserver Admission (v1)"): the request's `apiVersion` and `kind` are
//! copied into the answer, `response.uid` is the request's `uid`, and the response has
//! `allowed`, `status: {code, message}` when refused, and `warnings`. The types are this
//! module's own ([`AdmissionReview`], [`AdmissionRequest`], [`AdmissionResponse`]) so
//! that an object of any kind, or no object, is read without failing the whole review.
//!
//! What is reviewed (`Target`):
//! - Pods (`pods`, and `pods/ephemeralcontainers`): at CREATE every container, init
//!   container and ephemeral container; at UPDATE only those whose image differs from
//!   `oldObject`'s container of the same name and list (the Vela runtime's step patch).
//! - Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs: their pod
//!   template's containers, with the same rule at UPDATE.
//! - Anything else is allowed with a warning; DELETE and CONNECT are allowed silently.
//!
//! The object, reduced to the containers to check, goes through the manifest reader
//! ([`pullcheck_kube::read_manifests`], pull-policy defaulting included); images
//! matching an exempt pattern are skipped; pull secrets come from the cluster through
//! the same chain as `check --namespace`; the shared checker asks the registries within
//! [`AdmissionOptions::timeout`]. Only `missing`, `no_access`, `denied`, `blocked` and
//! `invalid` can refuse (in [`AdmissionMode::Deny`]); anything the webhook cannot
//! decide (an unreachable registry, the deadline, a failed Kubernetes lookup) is
//! allowed with a warning.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pullcheck::input::{ContainerList, Disposition, Origin};
use pullcheck::report::{ImageReport, Report, Status, escape_controls};
use pullcheck_sources::RequestError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::AppState;
use crate::api::{ApiError, Limit};
use crate::conn::TlsInfo;

/// The `apiVersion` of the reviews this webhook answers.
pub const API_VERSION: &str = "admission.k8s.io/v1";
/// The `kind` of the reviews this webhook answers.
pub const KIND: &str = "AdmissionReview";
/// The exempt image when none is given: the Vela Kubernetes runtime's placeholder.
pub const DEFAULT_EXEMPT_IMAGE: &str = "docker.io/kubernetes/pause:latest";
/// The default of [`AdmissionOptions::timeout`], below the API server's default
/// `timeoutSeconds` of 10.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(8);
/// Longest single warning, in characters (the API server truncates longer ones).
pub const MAX_WARNING_CHARS: usize = 119;
/// Most characters of all warnings of one answer together.
pub const MAX_WARNINGS_TOTAL: usize = 4096;
/// The default of [`AdmissionOptions::max_body`]: 3 MiB, the Kubernetes API server's
/// own limit on a request body (`maxRequestBodyBytes`), so no review it sends is refused.
pub const DEFAULT_MAX_BODY: usize = 3 << 20;
/// The default of [`AdmissionOptions::max_reviews`].
pub const DEFAULT_MAX_REVIEWS: usize = 16;
/// The default of [`AdmissionOptions::max_containers`].
pub const DEFAULT_MAX_CONTAINERS: usize = 500;

/// What a failing image does to the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionMode {
    /// Allowed, with one warning per failing container.
    Warn,
    /// Refused (`allowed: false`, `status.code` 403) when an image is missing, not
    /// accessible, denied, blocked or invalid.
    Deny,
}

impl AdmissionMode {
    /// `warn` or `deny`.
    ///
    /// # Errors
    /// Any other value, with a message naming the allowed ones.
    pub fn parse(value: &str) -> Result<AdmissionMode, String> {
        match value {
            "warn" => Ok(AdmissionMode::Warn),
            "deny" => Ok(AdmissionMode::Deny),
            other => Err(format!("admission mode {other:?}: must be warn or deny")),
        }
    }

    /// `warn` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionMode::Warn => "warn",
            AdmissionMode::Deny => "deny",
        }
    }
}

/// The webhook's settings (`pullcheck serve --admission ...`).
#[derive(Debug, Clone)]
pub struct AdmissionOptions {
    /// The mode of `POST /v1/admission`; `/v1/admission/warn` and `/v1/admission/deny`
    /// force one (the webhook configuration routes labelled namespaces there).
    pub mode: AdmissionMode,
    /// Images not asked about: globs (`*` within a path segment, `**` across) matched on
    /// the canonical reference (`docker.io/library/alpine:latest`); a pattern without a
    /// glob character is itself normalised first, so `kubernetes/pause` means
    /// `docker.io/kubernetes/pause:latest`.
    pub exempt_images: Vec<String>,
    /// How long a review may take; registries not answered by then are `unreachable`.
    pub timeout: Duration,
    /// A CA (PEM) whose client certificates the admission routes require (the API
    /// server's, configured with its `--admission-control-config-file`). The TLS
    /// listener then asks every client for a certificate but lets those without one on
    /// (probes, `/v1/checks` callers); only the admission routes refuse them, with 401.
    /// `None`: any client may call the admission routes.
    pub client_ca: Option<std::path::PathBuf>,
    /// The largest review body, in bytes; more gets 413. Default [`DEFAULT_MAX_BODY`].
    pub max_body: usize,
    /// Reviews in flight at most (apart from the checks' `max_checks`); more get 503
    /// with `Retry-After: 1`, which the API server treats as a failed call
    /// (`failurePolicy: Ignore`: allowed). Bodies are read only once a slot is held.
    /// Default [`DEFAULT_MAX_REVIEWS`].
    pub max_reviews: usize,
    /// Containers and image volumes one review checks at most (at UPDATE, those whose
    /// image changed); an object with more is allowed with a warning that names the
    /// limit, unchecked, as anything the webhook cannot decide. Default
    /// [`DEFAULT_MAX_CONTAINERS`].
    pub max_containers: usize,
}

impl Default for AdmissionOptions {
    fn default() -> Self {
        AdmissionOptions {
            mode: AdmissionMode::Warn,
            exempt_images: vec![DEFAULT_EXEMPT_IMAGE.to_owned()],
            timeout: DEFAULT_TIMEOUT,
            client_ca: None,
            max_body: DEFAULT_MAX_BODY,
            max_reviews: DEFAULT_MAX_REVIEWS,
            max_containers: DEFAULT_MAX_CONTAINERS,
        }
    }
}

/// The compiled settings, in the shared state.
#[derive(Debug)]
pub(crate) struct Admission {
    mode: AdmissionMode,
    exempt: globset::GlobSet,
    timeout: Duration,
    client_certificates: bool,
    pub(crate) max_body: usize,
    max_reviews: usize,
    max_containers: usize,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Admission {
    /// Compiles the exempt patterns.
    ///
    /// # Errors
    /// A pattern that is not a valid glob, with the pattern in the message.
    pub(crate) fn new(options: &AdmissionOptions) -> Result<Admission, crate::ConfigError> {
        let bad = |pattern: Option<&String>, message: String| crate::ConfigError::Pattern {
            setting: crate::ServeSetting::AdmissionExemptImage,
            pattern: pattern.cloned(),
            message,
        };
        let mut builder = globset::GlobSetBuilder::new();
        for pattern in &options.exempt_images {
            let normalised = if pattern.contains(['*', '?', '[', '{']) {
                pattern.clone()
            } else {
                pullcheck::reference::Reference::parse_normalized(pattern)
                    .map(|r| r.canonical())
                    .map_err(|e| bad(Some(pattern), e.to_string()))?
            };
            let glob = globset::GlobBuilder::new(&normalised)
                .literal_separator(true)
                .build()
                .map_err(|e| bad(Some(pattern), e.to_string()))?;
            builder.add(glob);
        }
        let exempt = builder.build().map_err(|e| bad(None, e.to_string()))?;
        Ok(Admission {
            mode: options.mode,
            exempt,
            timeout: options.timeout,
            client_certificates: options.client_ca.is_some(),
            max_body: options.max_body,
            max_reviews: options.max_reviews,
            max_containers: options.max_containers,
            slots: Arc::new(tokio::sync::Semaphore::new(options.max_reviews)),
        })
    }

    /// Whether `image` (as written) is exempt: its canonical form matches a pattern.
    fn is_exempt(&self, image: &str) -> bool {
        pullcheck::reference::Reference::parse_normalized(image)
            .is_ok_and(|r| self.exempt.is_match(r.canonical()))
    }
}

/// An `admission.k8s.io/v1` `AdmissionReview`, as sent by the API server and as answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// `AdmissionReview`.
    pub kind: String,
    /// The request (in what the API server sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The response (in what the webhook answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// `meta/v1.GroupVersionKind`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    #[serde(default)]
    pub version: String,
    /// The kind (`Pod`).
    #[serde(default)]
    pub kind: String,
}

/// `meta/v1.GroupVersionResource`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    #[serde(default)]
    pub version: String,
    /// The resource (`pods`).
    #[serde(default)]
    pub resource: String,
}

/// The fields of an `AdmissionRequest` the webhook reads (others, such as `userInfo`
/// and `options`, are ignored).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdmissionRequest {
    /// Identifies this round trip; copied into the response.
    pub uid: String,
    /// The type of `object` (`v1.Pod`).
    pub kind: GroupVersionKind,
    /// The resource requested (`v1.pods`).
    pub resource: GroupVersionResource,
    /// The subresource, if any (`ephemeralcontainers`, `status`).
    #[serde(
        default,
        rename = "subResource",
        skip_serializing_if = "Option::is_none"
    )]
    pub sub_resource: Option<String>,
    /// The object's name; may be empty at CREATE with `generateName`.
    #[serde(default)]
    pub name: String,
    /// The object's namespace.
    #[serde(default)]
    pub namespace: String,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// The new object (CREATE, UPDATE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The existing object (UPDATE, DELETE).
    #[serde(default, rename = "oldObject", skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// Whether nothing will be persisted. The webhook has no side effects either way.
    #[serde(default, rename = "dryRun")]
    pub dry_run: Option<bool>,
}

/// `meta/v1.Status`, as far as a refusal needs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdmissionStatus {
    /// The HTTP code the API server answers the client with (403).
    pub code: u16,
    /// What the client shows (`kubectl`, the Vela step's error).
    pub message: String,
}

/// An `AdmissionResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdmissionResponse {
    /// The request's `uid`.
    pub uid: String,
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why not, when refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionStatus>,
    /// Shown to the client (`kubectl` prints `Warning: ...`), each under 120 characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What a review is about, decided from `kind`, `resource` and `subResource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A Pod (`pods` or `pods/ephemeralcontainers`).
    Pod,
    /// A workload with a pod template at this path.
    Workload(&'static [&'static str]),
    /// Anything else.
    Other,
}

const TEMPLATE: &[&str] = &["spec", "template", "spec"];
const CRONJOB_TEMPLATE: &[&str] = &["spec", "jobTemplate", "spec", "template", "spec"];
/// The container lists of a pod spec, as the manifest reader names them.
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];
/// The pod spec's list whose `image` entries are pulled too (image volumes).
const VOLUMES: &str = "volumes";

fn target(request: &AdmissionRequest) -> Target {
    let (group, kind) = (request.kind.group.as_str(), request.kind.kind.as_str());
    let sub = request.sub_resource.as_deref().unwrap_or("");
    match (group, kind, sub) {
        ("", "Pod", "" | "ephemeralcontainers") => Target::Pod,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet", "")
        | ("batch", "Job", "") => Target::Workload(TEMPLATE),
        ("batch", "CronJob", "") => Target::Workload(CRONJOB_TEMPLATE),
        _ => Target::Other,
    }
}

/// The `kind` label: the reviewed kinds, else `other` (bounded).
fn kind_label(request: &AdmissionRequest) -> &'static str {
    match (target(request), request.kind.kind.as_str()) {
        (Target::Other, _) => "other",
        (_, "Pod") => "Pod",
        (_, "Deployment") => "Deployment",
        (_, "StatefulSet") => "StatefulSet",
        (_, "DaemonSet") => "DaemonSet",
        (_, "ReplicaSet") => "ReplicaSet",
        (_, "Job") => "Job",
        (_, "CronJob") => "CronJob",
        _ => "other",
    }
}

/// The `operation` label (bounded).
fn operation_label(operation: &str) -> &'static str {
    match operation {
        "CREATE" => "CREATE",
        "UPDATE" => "UPDATE",
        "DELETE" => "DELETE",
        "CONNECT" => "CONNECT",
        _ => "other",
    }
}

/// `POST /v1/admission`: the configured mode.
pub async fn post_admission(
    State(state): State<Arc<AppState>>,
    tls: Option<Extension<Arc<TlsInfo>>>,
    request: Request,
) -> Response {
    review_route(&state, None, tls, request).await
}

/// `POST /v1/admission/{mode}`: `warn` or `deny` whatever the configured mode (for
/// namespaces the webhook configuration selects by label); any other mode is 404.
pub async fn post_admission_mode(
    State(state): State<Arc<AppState>>,
    Path(mode): Path<String>,
    tls: Option<Extension<Arc<TlsInfo>>>,
    request: Request,
) -> Response {
    match AdmissionMode::parse(&mode) {
        Ok(mode) => review_route(&state, Some(mode), tls, request).await,
        Err(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            "no such route: the admission modes are /v1/admission/warn and /v1/admission/deny",
        )
        .into_response(),
    }
}

async fn review_route(
    state: &AppState,
    mode: Option<AdmissionMode>,
    tls: Option<Extension<Arc<TlsInfo>>>,
    request: Request,
) -> Response {
    let Some(admission) = &state.admission else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "the admission webhook is not enabled ({})",
                state.name(crate::ServeSetting::Admission)
            ),
        )
        .into_response();
    };
    // The body layer refused a POST without a certificate before its body; this holds
    // for whatever else reaches the route.
    if let Some(refused) = admission.certificate_refusal(state, tls.as_ref().map(|e| &*e.0)) {
        return refused;
    }
    let started = Instant::now();
    let (_slot, body) = match read_body(state, admission, request).await {
        Ok(read) => read,
        Err(answer) => {
            state
                .metrics
                .admission_review("other", "other", "error", 0.0);
            return answer;
        }
    };
    // Decoding a review of up to --admission-max-body is CPU work: on the blocking pool,
    // so that large reviews (which need no token) never stall /healthz or /v1/checks.
    let parsed = match state
        .parse(true, move || parse_review(&body))
        .await
        .unwrap_or_else(|e| Err(format!("the review could not be decoded: {e}")))
    {
        Ok(r) => r,
        Err(message) => {
            state
                .metrics
                .admission_review("other", "other", "error", 0.0);
            return ApiError::new(StatusCode::BAD_REQUEST, message).into_response();
        }
    };
    let (api_version, kind, request) = parsed;
    let mode = mode.unwrap_or(admission.mode);
    let response = review(state, admission, mode, &request).await;
    let decision = if !response.allowed {
        "denied"
    } else if response.warnings.is_empty() {
        "allowed"
    } else {
        "warned"
    };
    state.metrics.admission_review(
        operation_label(&request.operation),
        kind_label(&request),
        decision,
        started.elapsed().as_secs_f64(),
    );
    tracing::info!(
        uid = %request.uid,
        operation = %request.operation,
        kind = %request.kind.kind,
        namespace = %request.namespace,
        name = %request.name,
        dry_run = request.dry_run.unwrap_or(false),
        mode = mode.as_str(),
        decision,
        "admission review"
    );
    let answer = AdmissionReview {
        api_version,
        kind,
        request: None,
        response: Some(response),
    };
    (StatusCode::OK, axum::Json(answer)).into_response()
}

/// A review slot and the body, read once the slot is held (so at most
/// `--admission-max-reviews` bodies of at most `--admission-max-body` are in memory).
///
/// # Errors
/// The answer: 413 over the body limit (by `Content-Length` before the slot, or as
/// read), 503 with `Retry-After: 1` when every slot is taken, 400 when the body cannot
/// be read.
async fn read_body(
    state: &AppState,
    admission: &Admission,
    request: Request,
) -> Result<(Slot, Bytes), Response> {
    let too_large = |count: Option<usize>| {
        state
            .metrics
            .over_limit(crate::metrics::LimitLabel::AdmissionMaxBody);
        ApiError::over_limit(
            "bytes of body",
            Limit {
                setting: crate::ServeSetting::AdmissionMaxBody,
                limit: admission.max_body,
                count,
            },
            state.setting_name,
        )
        .into_response()
    };
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(length) = declared.filter(|l| *l > admission.max_body) {
        return Err(too_large(Some(length)));
    }
    // The body layer takes the review slot before it reads the body (body::read_body).
    let slot = match request.extensions().get::<ReviewSlot>().cloned() {
        Some(slot) => slot,
        None => admission.review_slot(state).map_err(|answer| *answer)?,
    };
    match axum::body::to_bytes(request.into_body(), admission.max_body).await {
        Ok(body) => Ok((slot.0, body)),
        Err(e) if crate::api::is_length_limit(&e) => Err(too_large(None)),
        Err(e) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("cannot read the body: {e}"),
        )
        .into_response()),
    }
}

/// One of `--admission-max-reviews` slots, held from before the body is read until the
/// answer.
type Slot = Arc<tokio::sync::OwnedSemaphorePermit>;

/// The review slot the body layer took for an admission request (a request extension).
#[derive(Clone)]
pub(crate) struct ReviewSlot(pub(crate) Slot);

impl Admission {
    /// 401 for a request without a client certificate when `--admission-client-ca` is
    /// set (counted as an `error` review), `None` otherwise. rustls has already verified
    /// any certificate presented against that CA at the handshake; only its absence is
    /// left to refuse. Asked before a review slot is taken or any of the body is read
    /// ([`crate::body::read_body`]), so that clients without a certificate cannot hold
    /// the slots of `--admission-max-reviews` with slow bodies.
    pub(crate) fn certificate_refusal(
        &self,
        state: &AppState,
        tls: Option<&TlsInfo>,
    ) -> Option<Response> {
        if !self.client_certificates || tls.is_some_and(|info| !info.peer_certificates.is_empty()) {
            return None;
        }
        state
            .metrics
            .admission_review("other", "other", "error", 0.0);
        Some(
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                format!(
                    "a client certificate signed by the CA of {} is required",
                    state.name(crate::ServeSetting::AdmissionClientCa)
                ),
            )
            .into_response(),
        )
    }

    /// Takes one of `--admission-max-reviews` slots, or answers 503 with `Retry-After`
    /// (counted as `pullcheck_requests_over_limit_total{limit="admission_max_reviews"}`).
    pub(crate) fn review_slot(&self, state: &AppState) -> Result<ReviewSlot, Box<Response>> {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            state
                .metrics
                .over_limit(crate::metrics::LimitLabel::AdmissionMaxReviews);
            let mut answer = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{} reviews are in flight ({}); try again",
                    self.max_reviews,
                    state.name(crate::ServeSetting::AdmissionMaxReviews)
                ),
            )
            .into_response();
            answer.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
            return Err(Box::new(answer));
        };
        Ok(ReviewSlot(Arc::new(slot)))
    }
}

/// The review's `apiVersion`, `kind` and request.
///
/// # Errors
/// Not JSON, not an `admission.k8s.io/v1` `AdmissionReview`, or without a `request`
/// that has `uid`, `kind`, `resource` and `operation`: the message says which.
fn parse_review(body: &[u8]) -> Result<(String, String, AdmissionRequest), String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not JSON (an AdmissionReview): {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("the body is not an AdmissionReview: not a JSON object".to_owned());
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "the body is not an {API_VERSION} {KIND} (apiVersion {api_version:?}, kind \
             {kind:?}); the webhook configuration must say admissionReviewVersions: [v1]"
        ));
    }
    let Some(request) = object.get("request") else {
        return Err("the AdmissionReview has no `request`".to_owned());
    };
    let request: AdmissionRequest = crate::decode::value(request, "request.", request_field)
        .map_err(|e| format!("the AdmissionReview's request is malformed: {}", e.message))?;
    if request.uid.is_empty() {
        return Err("the AdmissionReview's request has an empty `uid`".to_owned());
    }
    Ok((api_version.to_owned(), kind.to_owned(), request))
}

/// What each field of an [`AdmissionRequest`] expects, in JSON's words, for errors.
fn request_field(path: &str) -> Option<&'static str> {
    Some(match path {
        "uid" | "name" | "namespace" | "operation" | "subResource" | "kind.group"
        | "kind.version" | "kind.kind" | "resource.group" | "resource.version"
        | "resource.resource" => "a string",
        "kind" => "an object with group, version and kind",
        "resource" => "an object with group, version and resource",
        "dryRun" => "true or false",
        _ => return None,
    })
}

/// The answer to one request; never fails (what cannot be decided is allowed).
async fn review(
    state: &AppState,
    admission: &Admission,
    mode: AdmissionMode,
    request: &AdmissionRequest,
) -> AdmissionResponse {
    let allow = |warnings: Vec<String>| AdmissionResponse {
        uid: request.uid.clone(),
        allowed: true,
        status: None,
        warnings: cap_warnings(warnings),
    };
    if !matches!(request.operation.as_str(), "CREATE" | "UPDATE") {
        return allow(Vec::new());
    }
    let path: &[&str] = match target(request) {
        Target::Pod => &["spec"],
        Target::Workload(path) => path,
        Target::Other => {
            let sub = request
                .sub_resource
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            return allow(vec![format!(
                "pullcheck: {} ({}{sub}) is not reviewed; its images were not checked",
                request.kind.kind, request.resource.resource
            )]);
        }
    };
    let Some(object) = request.object.as_ref().and_then(Value::as_object) else {
        let warning = match request.object.as_ref().filter(|o| !o.is_null()) {
            None => "pullcheck: the request has no object; its images were not checked".to_owned(),
            Some(other) => format!(
                "pullcheck: the request's object is {}, not an object; its images were not \
                 checked",
                crate::decode::json_type(other)
            ),
        };
        return allow(vec![warning]);
    };
    if let Some(warning) = missing_type_fields(object) {
        return allow(vec![warning]);
    }
    let old = if request.operation == "UPDATE" {
        request.old_object.as_ref().and_then(|o| pod_spec(o, path))
    } else {
        None
    };
    let Some(reduced) = reduce(object, path, old) else {
        // No image is new: nothing to ask.
        return allow(Vec::new());
    };
    if let Some(warning) = over_max_containers(state, admission, &reduced, path) {
        return allow(vec![warning]);
    }
    let deadline_start = Instant::now();
    let outcome = tokio::time::timeout(
        admission.timeout,
        check_object(state, admission, request, reduced, deadline_start),
    )
    .await;
    let report = match outcome {
        Ok(Ok(report)) => report,
        Ok(Err(warning)) => return allow(vec![warning]),
        Err(_) => {
            return allow(vec![format!(
                "pullcheck: images not verified within {}",
                pullcheck_sources::format_duration(admission.timeout)
            )]);
        }
    };
    decide(request, mode, &report)
}

/// The warning for an object without `apiVersion` or `kind` (the manifest reader could
/// not tell what it is, so its images would go unchecked in silence): undecidable,
/// allowed in both modes, with the missing fields named.
fn missing_type_fields(object: &Map<String, Value>) -> Option<String> {
    let missing: Vec<&str> = ["apiVersion", "kind"]
        .into_iter()
        .filter(|key| {
            object
                .get(*key)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "pullcheck: the object has no {}; its images were not checked",
        missing
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" and no ")
    ))
}

/// The containers of the pod spec at `path` (every list) and its image volumes.
fn container_count(object: &Value, path: &[&str]) -> usize {
    let Some(spec) = pod_spec(object, path) else {
        return 0;
    };
    let containers: usize = CONTAINER_LISTS
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .map(Vec::len)
        .sum();
    containers + image_volumes(spec).count()
}

/// The image volumes of a pod spec (`volumes[]` entries with `image`, Kubernetes 1.31+),
/// each as `(name, reference)`: the kubelet pulls each one as it pulls a container's image.
fn image_volumes(spec: &Map<String, Value>) -> impl Iterator<Item = (&str, &str)> {
    spec.get(VOLUMES)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|volume| {
            let image = volume.get("image")?;
            let name = volume.get("name").and_then(Value::as_str).unwrap_or("");
            let reference = image.get("reference").and_then(Value::as_str).unwrap_or("");
            Some((name, reference))
        })
}

/// The warning for an object with more containers and image volumes to check than
/// `--admission-max-containers`, counted before it is read or checked: allowed,
/// unchecked, as anything the webhook cannot decide.
fn over_max_containers(
    state: &AppState,
    admission: &Admission,
    reduced: &Value,
    path: &[&str],
) -> Option<String> {
    let count = container_count(reduced, path);
    if count <= admission.max_containers {
        return None;
    }
    state
        .metrics
        .over_limit(crate::metrics::LimitLabel::AdmissionMaxContainers);
    tracing::warn!(
        containers = count,
        limit = admission.max_containers,
        setting = state.name(crate::ServeSetting::AdmissionMaxContainers),
        "admission: over the containers limit; allowed unchecked"
    );
    Some(format!(
        "pullcheck: {count} containers and image volumes, over the limit of {} ({}); \
         images not checked",
        admission.max_containers,
        state.name(crate::ServeSetting::AdmissionMaxContainers)
    ))
}

/// The pod spec at `path` in `object`, if it is a mapping.
fn pod_spec<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    let mut current = object;
    for key in path {
        current = current.get(key)?;
    }
    current.as_object()
}

/// `(list, name, image)` of a pod spec's containers and image volumes (list `volumes`,
/// the volume's `reference`).
fn images_by_name(spec: &Map<String, Value>) -> HashSet<(&'static str, String, String)> {
    let mut out = HashSet::new();
    for list in CONTAINER_LISTS {
        for container in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = container.get("name").and_then(Value::as_str).unwrap_or("");
            let image = container.get("image").and_then(Value::as_str).unwrap_or("");
            out.insert((list, name.to_owned(), image.to_owned()));
        }
    }
    for (name, reference) in image_volumes(spec) {
        out.insert((VOLUMES, name.to_owned(), reference.to_owned()));
    }
    out
}

/// `object` with only the containers and image volumes to check in its pod spec: all of
/// them, or with `old` (an UPDATE) those whose image (reference) differs from the old
/// container of the same list and name (the old image volume of the same name). `None` when there is none to check. An object without a pod spec at `path`
/// is kept whole, so the manifest reader says what is wrong with it.
fn reduce(
    object: &Map<String, Value>,
    path: &[&str],
    old: Option<&Map<String, Value>>,
) -> Option<Value> {
    let mut reduced = Value::Object(object.clone());
    let Some(old) = old else {
        return Some(reduced);
    };
    let before = images_by_name(old);
    let mut spec = &mut reduced;
    for key in path {
        spec = spec.get_mut(key)?;
    }
    let spec = spec.as_object_mut()?;
    let mut left = 0;
    for list in CONTAINER_LISTS {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            containers.retain(|c| {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                // One lookup per container: an UPDATE of n containers costs O(n), not
                // O(n²) (a review needs no token, so its cost must stay linear).
                !before.contains(&(list, name.to_owned(), image.to_owned()))
            });
            left += containers.len();
        }
    }
    // Image volumes likewise, by volume name: a Pod's volumes cannot change, so an UPDATE
    // of a Pod keeps none; a workload's template may change its volume's reference.
    if let Some(Value::Array(volumes)) = spec.get_mut(VOLUMES) {
        volumes.retain(|v| {
            let Some(image) = v.get("image") else {
                return true;
            };
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            let reference = image.get("reference").and_then(Value::as_str).unwrap_or("");
            let changed = !before.contains(&(VOLUMES, name.to_owned(), reference.to_owned()));
            left += usize::from(changed);
            changed
        });
    }
    (left > 0).then_some(reduced)
}

/// Reads the reduced object's containers, finds its pull secrets and checks its images.
///
/// # Errors
/// A warning to allow with: the object cannot be read, or its pull secrets cannot be
/// looked up (checking without them could refuse an image the kubelet can pull).
async fn check_object(
    state: &AppState,
    admission: &Admission,
    request: &AdmissionRequest,
    reduced: Value,
    deadline_start: Instant,
) -> Result<Report, String> {
    let text = serde_json::to_string_pretty(&reduced)
        .map_err(|e| format!("pullcheck: the object cannot be read: {e}"))?;
    let namespace = (!request.namespace.is_empty()).then(|| request.namespace.clone());
    let check = pullcheck_sources::CheckRequest {
        inputs: vec![pullcheck_sources::Input {
            text: pullcheck_sources::NamedText {
                name: object_file(request),
                text,
            },
            kind: Some(pullcheck_sources::InputKind::Manifests),
        }],
        namespace,
        // A workload has no placeholder; say so rather than leave it to the default.
        runtime: Some(pullcheck_sources::Runtime::Docker),
        // The registries' part ends a little before the review's own timeout, so that
        // what they did not answer is reported as `unreachable`, image by image.
        deadline: admission.timeout.mul_f64(0.9),
        deadline_start: Some(deadline_start),
        include_on_start: true,
        allow_empty: true,
        ..pullcheck_sources::CheckRequest::default()
    };
    let prepared = state
        .parse(true, move || check.read())
        .await
        .map_err(|e| format!("pullcheck: the object cannot be read: {e}"))?
        .map_err(|e| {
            shorten(&format!(
                "pullcheck: the object cannot be read: {}",
                unreadable(&e)
            ))
        })?;
    // The review's own timeout bounds the lookups.
    let mut ready = prepared
        .gather(state.cluster.as_ref().ok())
        .await
        .map_err(|e| not_gathered(&e))?;
    let unread = &ready.gathered.unread;
    // Why the cluster was not asked: no Kubernetes API, or a review without a namespace
    // to read the secrets in.
    let why = if state.cluster.is_ok() && request.namespace.is_empty() {
        "the review names no namespace"
    } else {
        "no Kubernetes API"
    };
    if unread.iter().any(|u| !u.names.is_empty()) {
        // Checking without the secrets it names could refuse what the kubelet can pull.
        return Err(format!(
            "pullcheck: imagePullSecrets not readable ({why}); images not verified"
        ));
    }
    // A workload without imagePullSecrets pulls with its ServiceAccount's (a Pod at
    // CREATE has them copied in already): without the API they cannot be read, and
    // checking anonymously could refuse what the kubelet can pull.
    if unread.iter().any(|u| u.kind != "Pod") {
        return Err(format!(
            "pullcheck: the ServiceAccount's imagePullSecrets are not readable ({why}); \
             images not verified"
        ));
    }
    for set in &mut ready.gathered.sets {
        for u in &mut set.uses {
            if matches!(u.disposition, Disposition::Check) && admission.is_exempt(&u.image) {
                u.disposition = Disposition::Skip(pullcheck::input::Skip::Exempt);
            }
        }
    }
    Ok(crate::check::run(state, ready).await)
}

/// Why the object cannot be read, without a position: the positions are in pullcheck's
/// own copy of the object (the JSON it was given), which mean nothing to the person who
/// wrote it, so only the readers' messages ([`pullcheck_sources::SourceError::message`])
/// are kept. The webhook's brief of each [`RequestError`] of reading; those of the
/// lookups are [`not_gathered`]'s.
fn unreadable(error: &RequestError) -> String {
    match error {
        RequestError::Inputs(errors) => errors
            .iter()
            .map(|(_, e)| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
        RequestError::Template(e) | RequestError::PullSecret(e) => e.message.clone(),
        // Not asked for (`allow_empty`, no template, no placeholder), said if it comes.
        RequestError::NothingToCheck(_) => "no container image in it".to_owned(),
        RequestError::TemplateWithoutNamespace(name) => {
            format!("pods template {name:?} without a namespace")
        }
        RequestError::PlaceholderImage(e) => format!("placeholder image: {}", e.message()),
        RequestError::Lookup(_) | RequestError::LookupDeadline(_) => {
            "pull secrets not readable".to_owned()
        }
        RequestError::InvalidName {
            of: pullcheck_sources::NameOf::Namespace,
            name,
            problem,
        } => format!("namespace {name:?} {problem}"),
        RequestError::InvalidName { name, problem, .. } => {
            format!("pods template {name:?} {problem}")
        }
    }
}

/// The webhook's brief of a [`RequestError`] of the lookups: the facts are logged, the
/// answer says only that the images were not verified and why in a few words.
fn not_gathered(error: &RequestError) -> String {
    match error {
        RequestError::PullSecret(e) => {
            tracing::warn!("admission: a pull secret is malformed: {}", e.message);
            "pullcheck: a pull secret is malformed; images not verified".to_owned()
        }
        RequestError::LookupDeadline(_) => {
            tracing::warn!("admission: pull secrets not read: {error}");
            "pullcheck: pull secrets not read in time; images not verified".to_owned()
        }
        other => {
            tracing::warn!("admission: pull secrets not read: {other}");
            "pullcheck: pull secrets not readable; images not verified".to_owned()
        }
    }
}

/// The container of an origin, for people, as its list's word and its name:
/// (`container`, `test`), (`init container`, `clone`), (`ephemeral container`, `debug`),
/// (`image volume`, `data`), from [`Origin::pod`]'s fields (the owner is the review's
/// object); no word and the origin's name when it is no container (a pod spec's
/// problem).
fn container_of(origin: &Origin) -> (&'static str, String) {
    match &origin.pod {
        Some(pod) => {
            let list = match pod.list {
                ContainerList::Containers => "container",
                ContainerList::InitContainers => "init container",
                ContainerList::EphemeralContainers => "ephemeral container",
                ContainerList::Volumes => "image volume",
            };
            (list, pod.name.clone())
        }
        None => ("", origin.name.clone()),
    }
}

/// The name the object's text is read under: its kind and namespace.
fn object_file(request: &AdmissionRequest) -> String {
    format!("{} {}", request.kind.kind, request.namespace)
}

/// What happened to an image, in a word or three.
fn what(status: Status) -> &'static str {
    match status {
        Status::Missing => "not found",
        Status::NoAccess => "not found or not accessible",
        Status::Denied => "access denied",
        Status::Unrunnable => "pulls but will not run (another platform)",
        Status::Blocked => "blocked",
        Status::Invalid => "invalid",
        Status::Unreachable => "not verified",
        other => other.as_str(),
    }
}

/// What an image's row found, in a few words made from its fields (status, reason, the
/// registry host, the credential's source, the platforms, the plugins that failed),
/// never from another crate's text, each fact said once: the status in words ([`what`])
/// and what adds to it, such as `not found` and `no such tag` (the tag is the
/// reference's, which the line names already); `on HOST` added when a mirror, not the
/// reference's own registry, answered. A container's problems are their messages alone:
/// their positions are in pullcheck's own copy of the object (the JSON it was given),
/// which mean nothing to the person who wrote it. Returns the status's words and the
/// rest (empty when there is nothing to add).
fn finding(image: &ImageReport) -> (String, String) {
    use pullcheck::report::Reason as R;
    let what = what(image.status).to_owned();
    if !image.problems.is_empty() {
        let problems = image
            .problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        return (what, problems);
    }
    let parsed = image
        .canonical
        .as_deref()
        .and_then(|c| pullcheck::reference::Reference::parse(c).ok());
    // An authorization failure names the host that failed: a token server that is
    // refused or unreachable is not the registry's fault.
    let token_server = image
        .failed_host
        .as_ref()
        .filter(|f| f.role == pullcheck::registry::HostRole::TokenServer)
        .map(|f| format!("token server {}", f.host));
    let host = match &token_server {
        Some(named) => named.as_str(),
        None => image.registry.as_deref().unwrap_or("the registry"),
    };
    let credential = image
        .credential
        .as_ref()
        .map_or("no credential", |c| c.source.as_str());
    let mirror = match image.served_by_mirror() {
        Some(_) => format!(" on {host}"),
        None => String::new(),
    };
    let platforms = image.platforms.join(", ");
    let words = match image.reason {
        // The reference names the tag, the digest and the repository: only which of
        // them is missing is news.
        R::TagNotFound => format!("no such tag{mirror}"),
        R::DigestNotFound => format!("no such digest{mirror}"),
        R::ManifestUnknown => {
            let part = match parsed.as_ref().and_then(|r| r.digest()) {
                Some(_) => "digest",
                None => "tag",
            };
            format!("no such {part}{mirror} (the repository was not checked)")
        }
        R::RepositoryNotFound => format!("no such repository{mirror}"),
        R::PlatformNotFound if !image.platforms.is_empty() => {
            format!("the index{mirror} lists only {platforms}")
        }
        R::PlatformNotFound => format!("no manifest for the node's platform{mirror}"),
        R::PlatformMismatch if !image.platforms.is_empty() => {
            return (
                "pulls but will not run".to_owned(),
                format!("a single-platform image for {platforms}"),
            );
        }
        R::PlatformMismatch => String::new(),
        R::UnauthorizedAnonymous => "the registry asks for credentials, none matched".to_owned(),
        R::Unauthorized => format!("not authorized with {credential}"),
        R::CredentialsRequired => "the registry asks for a user name and password".to_owned(),
        R::UnsupportedAuth => "the registry's authentication is not supported".to_owned(),
        R::CredentialsRejected => format!("{credential} was rejected"),
        R::AccessDenied => return (format!("access denied by {host} (403)"), String::new()),
        R::TlsUntrusted => format!("the certificate of {host} is not trusted"),
        R::RateLimited => match image.retry_after {
            Some(wait) => format!("{host} is rate limiting (429; retry after {wait} s)"),
            None => format!("{host} is rate limiting (429)"),
        },
        R::ServerError => format!("{host} failed to answer (server error)"),
        R::NotARegistry => format!("{host} did not answer as a registry"),
        R::BadTokenReply => format!("{host} gave no usable token"),
        R::DigestMismatch => format!("{host} served another digest"),
        R::TlsFailed => format!("TLS with {host} failed"),
        R::ConnectionRefused => format!("{host} refused the connection"),
        R::ConnectionFailed => format!("the connection to {host} failed"),
        R::Timeout => format!("{host} timed out"),
        R::NameNotResolved => format!("{host} did not resolve"),
        R::DeadlineExceeded => format!("no answer from {host} in time"),
        R::ClientConfig => format!("the service's settings for {host} are unusable"),
        R::CredentialHelperFailed => "a credential helper failed".to_owned(),
        R::CredentialProviderFailed => {
            let names: Vec<&str> = image
                .provider_failures
                .iter()
                .map(|f| f.provider.as_str())
                .collect();
            format!("credential provider {} failed", names.join(", "))
        }
        R::NoEndpoint => "no endpoint to ask".to_owned(),
        R::BlockedByConfig if image.status == Status::Blocked => {
            return (
                "blocked by the node's mirror configuration".to_owned(),
                String::new(),
            );
        }
        R::BlockedByConfig => "the node's mirror configuration blocks it".to_owned(),
        R::EgressDenied if image.status == Status::Blocked => {
            return (
                format!("blocked by the service's egress policy ({host})"),
                String::new(),
            );
        }
        R::EgressDenied => format!("the service's egress policy refuses {host}"),
        R::UnpullableByConfig => "the node's mirror configuration cannot pull it".to_owned(),
        // The parser's kind in words of its own: its message repeats the reference,
        // which the line names already.
        R::InvalidReference => match image.error.as_ref().map(|e| e.kind) {
            Some("empty") => "the image is empty".to_owned(),
            Some("invalid_format") => "not in the reference format".to_owned(),
            Some("uppercase") => "the repository has upper case letters".to_owned(),
            Some("name_too_long") => "the repository is over 255 characters".to_owned(),
            Some("hex64") => "an image ID, not a reference".to_owned(),
            Some("digest_invalid") => "the digest is not valid".to_owned(),
            // Why the reference names no usable registry: the engine's own facts.
            Some(_) => image
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default(),
            None => String::new(),
        },
        R::Found
        | R::Cached
        | R::UnknownPullPolicy
        | R::InvalidContainer
        | R::UnresolvedVariable
        | R::TemplateStep
        | R::InitStep
        | R::NeverPulled
        | R::Exempt
        | R::DeferredOnStart => String::new(),
    };
    (what, words)
}

/// One failing container's line, in parts: every part has its control characters and
/// newlines escaped ([`escape_controls`], as the CLI's text report does), so that a
/// reference or a container name cannot split or forge a line.
#[derive(Clone)]
struct Line {
    /// The container's list in words (`container`, `init container`, `image volume`;
    /// empty when the origin is no container); never shortened.
    list: &'static str,
    /// The container's name (or the origin's, without a list).
    name: String,
    /// The reference as written; empty when the container names none.
    reference: String,
    /// The status in a few words ([`finding`]'s first part, from [`what`]).
    what: String,
    /// What adds to the status ([`finding`]'s second part); empty when nothing does.
    detail: String,
    /// The close tags of the hint (`; did you mean 1.22?`), escaped.
    close_tags: Vec<String>,
    /// How many of [`Line::close_tags`] the hint names; the rest are `…`.
    hinted: usize,
}

impl Line {
    /// `container NAME`, `NAME` without a list.
    fn container(&self) -> String {
        if self.list.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.list, self.name)
        }
    }

    /// `; did you mean 1.22 or 1.21?`, with [`Line::hinted`] of the tags (`; did you
    /// mean 1.22, …?` when some are left out), or empty.
    fn hint(&self) -> String {
        let shown = &self.close_tags[..self.hinted.min(self.close_tags.len())];
        match shown {
            [] => String::new(),
            _ if shown.len() < self.close_tags.len() => {
                format!("; did you mean {}, …?", shown.join(", "))
            }
            [one] => format!("; did you mean {one}?"),
            [init @ .., last] => format!("; did you mean {} or {last}?", init.join(", ")),
        }
    }

    /// `{container}: image {reference} {what}: {detail}{hint}` with `reference` in
    /// place of the whole reference.
    fn render(&self, reference: &str) -> String {
        let reason = if self.detail.is_empty() {
            self.what.to_owned()
        } else {
            format!("{}: {}", self.what, self.detail)
        };
        let (container, hint) = (self.container(), self.hint());
        // A container or an image volume without a reference: its problem says what is
        // wrong (`container app: no image`).
        if reference.is_empty() && !self.detail.is_empty() {
            format!("{container}: {}{hint}", self.detail)
        } else if reference.is_empty() {
            format!("{container}: {reason}{hint}")
        } else {
            format!("{container}: image {reference} {reason}{hint}")
        }
    }

    fn len(&self) -> usize {
        self.render(&self.reference).chars().count()
    }

    /// The line in at most `max` characters: whole if it fits; else a long container
    /// name loses its middle (`…`, down to 32 characters; a name is up to 63, RFC
    /// 1123; the list's word stays whole), then the reference's registry (its part
    /// before the first `/`, down to three characters and `…`), then the hint names
    /// fewer close tags (down to none), then the reference loses all but three
    /// characters of its front and its end (the repository's end and the tag), down to
    /// [`MIN_REFERENCE_CHARS`], then the name again (down to [`MIN_NAME_CHARS`]); if
    /// still too long, the tail is cut between words and ends in `…` ([`shorten_to`]).
    /// The status and the finding come before the hint, so they stay.
    fn fitted(&self, max: usize) -> String {
        let mut line = self.clone();
        // `original` elided to lose at least `over` characters, down to `least`.
        let elided = |original: &str, least: usize, over: usize, front: usize| {
            let chars = original.chars().count();
            let keep = chars.saturating_sub(over + 1).max(least);
            if keep + 1 < chars {
                elide_middle(original, keep, front.min(keep / 2))
            } else {
                original.to_owned()
            }
        };
        let over = |line: &Line| line.len().saturating_sub(max);
        if over(&line) > 0 {
            line.name = elided(&self.name, 32, over(&line), 16);
        }
        // The registry gives way first: the reference keeps its repository and tag
        // (after its first `/`) and three characters of its front.
        if over(&line) > 0
            && let Some((_, repository)) = self.reference.split_once('/')
        {
            let least = repository.chars().count() + 1 + 3;
            line.reference = elided(&self.reference, least, over(&line), 3);
        }
        while over(&line) > 0 && line.hinted > 0 {
            line.hinted -= 1;
        }
        if over(&line) > 0 {
            let lost = self.reference.chars().count() - line.reference.chars().count();
            line.reference = elided(&self.reference, MIN_REFERENCE_CHARS, over(&line) + lost, 3);
        }
        if over(&line) > 0 {
            // From the whole name: its first elision kept its ends too.
            let lost = self.name.chars().count() - line.name.chars().count();
            line.name = elided(
                &self.name,
                MIN_NAME_CHARS,
                over(&line) + lost,
                MIN_NAME_CHARS / 2,
            );
        }
        shorten_to(&line.render(&line.reference), max)
    }
}

/// The fewest characters a long reference is elided to (its ends, `…` between).
const MIN_REFERENCE_CHARS: usize = 16;

/// The fewest characters a long container name is elided to, the same way (the list's
/// word, `ephemeral container`, is never cut).
const MIN_NAME_CHARS: usize = 16;

/// `text` with `keep` of its characters: the first `front`, then `…`, then the last
/// `keep - front`.
fn elide_middle(text: &str, keep: usize, front: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= keep + 1 {
        return text.to_owned();
    }
    let front = front.min(keep);
    let head: String = chars[..front].iter().collect();
    let tail: String = chars[chars.len() - (keep - front)..].iter().collect();
    format!("{head}…{tail}")
}

/// One line per container of `image`:
/// `container test: image golang:1.2 not found: no such tag; did you mean 1.22?`.
fn lines_of(image: &ImageReport) -> Vec<Line> {
    let (what, detail) = finding(image);
    let what = escape_controls(&what).into_owned();
    let detail = escape_controls(&detail).into_owned();
    // The close tags come as data, not from the detail's words.
    let close_tags: Vec<String> = image
        .close_tags
        .iter()
        .map(|t| escape_controls(t).into_owned())
        .collect();
    let mut containers: Vec<(&'static str, String)> = image
        .origins
        .iter()
        .map(|o| {
            let (list, name) = container_of(o);
            (list, escape_controls(&name).into_owned())
        })
        .collect();
    containers.dedup();
    if containers.is_empty() {
        containers.push(("", "a container".to_owned()));
    }
    let reference = escape_controls(&image.reference).into_owned();
    containers
        .into_iter()
        .map(|(list, name)| Line {
            list,
            name,
            reference: reference.clone(),
            what: what.clone(),
            detail: detail.clone(),
            hinted: close_tags.len(),
            close_tags: close_tags.clone(),
        })
        .collect()
}

/// A warning for `line`: `pullcheck: ` and the line, in at most [`MAX_WARNING_CHARS`]
/// characters ([`Line::fitted`]).
fn warning(line: &Line) -> String {
    let head = "pullcheck: ";
    format!(
        "{head}{}",
        line.fitted(MAX_WARNING_CHARS - head.chars().count())
    )
}

/// A [`pullcheck::mirrors::VersionWarning`] as an admission warning, short enough for
/// [`MAX_WARNING_CHARS`] (the whole sentence, [`crate::render::version_warning`], is in
/// the `POST /v1/checks` answer): `pullcheck: containerd RELEASES differ at HOST
/// (KIND)`, the host's control characters escaped and a long one cut in the middle.
fn version_warning(w: &pullcheck::mirrors::VersionWarning) -> String {
    // The longest kind and releases leave this much of the limit to the host.
    const MAX_HOST_CHARS: usize = 24;
    let host = pullcheck::report::escape_controls(w.host());
    let chars: Vec<char> = host.chars().collect();
    let host: String = if chars.len() > MAX_HOST_CHARS {
        let half = MAX_HOST_CHARS / 2;
        let head: String = chars[..half].iter().collect();
        let tail: String = chars[chars.len() - (half - 1)..].iter().collect();
        format!("{head}…{tail}")
    } else {
        host.into_owned()
    };
    shorten(&format!(
        "pullcheck: {} {} differ at {host} ({})",
        w.runtime(),
        crate::render::releases(w.differing()),
        w.kind().name()
    ))
}

/// The most characters of one container's line in a refusal of several containers
/// ([`Line::fitted`]); a refusal of one container's image has the whole
/// [`MAX_MESSAGE_CHARS`].
const MAX_REFUSAL_LINE_CHARS: usize = 1000;

/// The fewest characters a line that does not fit whole is fitted into, with the rest of
/// the message's room; with less room left, it is counted in `… and N more`.
const MIN_FITTED_LINE_CHARS: usize = 80;

/// The most characters of a refusal's message: a person reads it in `kubectl` or in a
/// Vela step's error; the rest of the failing containers are counted.
const MAX_MESSAGE_CHARS: usize = 4096;

/// The answer for a report.
fn decide(request: &AdmissionRequest, mode: AdmissionMode, report: &Report) -> AdmissionResponse {
    let mut failures = Vec::new();
    let mut unverified = Vec::new();
    for image in &report.images {
        if image.status.is_failure() {
            failures.extend(lines_of(image));
        } else if image.status == Status::Unreachable {
            unverified.extend(lines_of(image));
        }
    }
    let mut unverified: Vec<String> = unverified.iter().map(warning).collect();
    // Where the node's containerd release would decide otherwise: after the images'
    // lines, in refusals' warnings too, since they can change what the node pulls.
    unverified.extend(report.version_warnings.iter().map(version_warning));
    if mode == AdmissionMode::Deny && !failures.is_empty() {
        // One line: `pullcheck: container test: image ...`; more: one per line.
        let message = match failures.as_slice() {
            [one] => {
                let head = "pullcheck: ";
                format!(
                    "{head}{}",
                    one.fitted(MAX_MESSAGE_CHARS - head.chars().count())
                )
            }
            many => {
                let mut message = format!("pullcheck: {} cannot pull their images:", {
                    let volumes = many.iter().filter(|l| l.list == "image volume").count();
                    counted(many.len() - volumes, volumes)
                });
                for (shown, failure) in many.iter().enumerate() {
                    let line = failure.fitted(MAX_REFUSAL_LINE_CHARS);
                    let left = many.len() - shown;
                    // Room for this line, and for the count of the rest after it.
                    let more = if left > 1 {
                        format!("\n… and {} more", left - 1).chars().count()
                    } else {
                        0
                    };
                    let room = MAX_MESSAGE_CHARS.saturating_sub(message.chars().count() + 1 + more);
                    // A line that does not fit whole takes the room left, when there is
                    // enough for its container, status and finding.
                    let line = if line.chars().count() <= room {
                        line
                    } else if room >= MIN_FITTED_LINE_CHARS {
                        failure.fitted(room)
                    } else {
                        message.push_str(&format!("\n… and {left} more"));
                        break;
                    };
                    message.push('\n');
                    message.push_str(&line);
                }
                message
            }
        };
        return AdmissionResponse {
            uid: request.uid.clone(),
            allowed: false,
            status: Some(AdmissionStatus { code: 403, message }),
            warnings: cap_warnings(unverified),
        };
    }
    let mut warnings: Vec<String> = failures.iter().map(warning).collect();
    warnings.extend(unverified);
    AdmissionResponse {
        uid: request.uid.clone(),
        allowed: true,
        status: None,
        warnings: cap_warnings(warnings),
    }
}

/// `2 containers`, `1 container and 1 image volume`, `3 image volumes`: the lines of a
/// refusal counted by what they are about (a container of any list, or an image
/// volume).
fn counted(containers: usize, volumes: usize) -> String {
    let of = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (containers, volumes) {
        (c, 0) => of(c, "container"),
        (0, v) => of(v, "image volume"),
        (c, v) => format!("{} and {}", of(c, "container"), of(v, "image volume")),
    }
}

/// `text` cut to [`MAX_WARNING_CHARS`] characters ([`shorten_to`]).
fn shorten(text: &str) -> String {
    shorten_to(text, MAX_WARNING_CHARS)
}

/// The most characters a word keeps when a text is shortened ([`shorten_to`]): a
/// longer one (a 200-character name) loses its middle, so the words after it stay.
const MAX_WORD_CHARS: usize = 32;

/// `text` cut to `max` characters at a space, ending in `…` when cut. First every word
/// over [`MAX_WORD_CHARS`] loses its middle (`…`), so that a long early token does not
/// take the words after it; a single word longer than `max` is cut where it must be.
fn shorten_to(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let text = text
        .split(' ')
        .map(|word| {
            let keep = MAX_WORD_CHARS - 1;
            elide_middle(word, keep, keep / 2)
        })
        .collect::<Vec<_>>()
        .join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > 0 => cut[..space].trim_end().to_owned(),
        _ => cut,
    };
    format!("{cut}…")
}

/// Each warning shortened; at most [`MAX_WARNINGS_TOTAL`] characters in all, the rest
/// counted in a last `… and N more` entry.
fn cap_warnings(warnings: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut total = 0;
    let count = warnings.len();
    for (i, warning) in warnings.into_iter().enumerate() {
        let warning = shorten(&warning);
        let len = warning.chars().count();
        // Room for the `… and N more` entry.
        if total + len > MAX_WARNINGS_TOTAL - 40 {
            out.push(format!("pullcheck: … and {} more", count - i));
            break;
        }
        total += len;
        out.push(warning);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_capped_per_entry_and_in_all() {
        let long = "xxxx ".repeat(100);
        let capped = cap_warnings(vec![long; 100]);
        assert!(
            capped
                .iter()
                .all(|w| w.chars().count() <= MAX_WARNING_CHARS)
        );
        assert!(capped.iter().map(|w| w.chars().count()).sum::<usize>() <= MAX_WARNINGS_TOTAL);
        assert!(
            capped.last().is_some_and(|w| w.contains("more")),
            "{capped:?}"
        );
    }

    fn row(reference: &str, status: Status, reason: pullcheck::report::Reason) -> ImageReport {
        ImageReport {
            canonical: pullcheck::reference::Reference::parse_normalized(reference)
                .ok()
                .map(|r| r.canonical()),
            origins: vec![Origin {
                file: Some("Pod ci".into()),
                line: Some(9),
                column: Some(14),
                kind: pullcheck::input::ContainerKind::Container,
                name: "Pod/p container app".into(),
                stage: None,
                pod: Some(pullcheck::input::PodContainer {
                    owner: "Pod/p".into(),
                    list: ContainerList::Containers,
                    name: "app".into(),
                }),
            }],
            ..ImageReport::new(
                reference,
                pullcheck::input::PullPolicy::Always.into(),
                status,
                reason,
            )
        }
    }

    /// The golden admission lines: each made from the row's fields; the registry's
    /// own words (`detail`) are not read.
    #[test]
    fn admission_lines_golden() {
        use pullcheck::report::Reason as R;
        let mut tag = row("golang:1.2", Status::Missing, R::TagNotFound);
        tag.registry = Some("registry-1.docker.io".into());
        tag.close_tags = vec!["1.22".into(), "1.21".into()];
        tag.detail = "words nobody reads".into();
        let mut mirrored = row(
            "registry.example.com/team/app:v9",
            Status::Missing,
            R::TagNotFound,
        );
        mirrored.registry = Some("mirror.example.com".into());
        let mut refused = row(
            "registry.example.com/team/app:v1",
            Status::Unreachable,
            R::ConnectionRefused,
        );
        refused.registry = Some("registry.example.com".into());
        let mut rejected = row(
            "registry.example.com/team/app:v1",
            Status::Denied,
            R::CredentialsRejected,
        );
        rejected.credential = Some(pullcheck::credentials::CredentialSource {
            source: "pull secret ci-pull (namespace ci)".into(),
            key: "registry.example.com".into(),
            username: None,
        });
        let mut limited = row(
            "registry.example.com/team/app:v1",
            Status::Unreachable,
            R::RateLimited,
        );
        limited.registry = Some("registry.example.com".into());
        limited.retry_after = Some(30);
        let mut platform = row(
            "registry.example.com/team/app:v1",
            Status::Missing,
            R::PlatformNotFound,
        );
        platform.registry = Some("registry.example.com".into());
        platform.platforms = vec!["linux/amd64".into(), "linux/arm64/v8".into()];
        let mut single = row(
            "registry.example.com/team/app:v1",
            Status::Unrunnable,
            R::PlatformMismatch,
        );
        single.registry = Some("registry.example.com".into());
        single.platforms = vec!["linux/amd64".into()];
        let lines: Vec<String> = [tag, mirrored, refused, rejected, limited, platform, single]
            .iter()
            .flat_map(lines_of)
            .map(|l| l.render(&l.reference))
            .collect();
        assert_eq!(
            lines,
            [
                "container app: image golang:1.2 not found: no such tag; did you mean 1.22 or \
                 1.21?",
                "container app: image registry.example.com/team/app:v9 not found: no such tag \
                 on mirror.example.com",
                "container app: image registry.example.com/team/app:v1 not verified: \
                 registry.example.com refused the connection",
                "container app: image registry.example.com/team/app:v1 access denied: pull \
                 secret ci-pull (namespace ci) was rejected",
                "container app: image registry.example.com/team/app:v1 not verified: \
                 registry.example.com is rate limiting (429; retry after 30 s)",
                "container app: image registry.example.com/team/app:v1 not found: the index \
                 lists only linux/amd64, linux/arm64/v8",
                "container app: image registry.example.com/team/app:v1 pulls but will not run: \
                 a single-platform image for linux/amd64",
            ]
        );
    }

    /// A review of a pod in `ci`, for [`decide`].
    fn review() -> AdmissionRequest {
        serde_json::from_value(serde_json::json!({
            "uid": "u1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "ci",
            "operation": "CREATE",
        }))
        .expect("a review request")
    }

    /// `row` for a container named `name`.
    fn row_of(name: &str, reference: &str) -> ImageReport {
        let mut image = row(
            reference,
            Status::Missing,
            pullcheck::report::Reason::RepositoryNotFound,
        );
        let pod = image.origins[0].pod.as_mut().expect("a pod container");
        pod.name = name.into();
        image
    }

    /// A refusal is bounded and names every container it can whole: one container with
    /// a 100,000-character reference gets a line of at most [`MAX_REFUSAL_LINE_CHARS`]
    /// that keeps the container, the reference's ends and the status; with a second
    /// container after a 5,000-character one, both are named, each line whole.
    #[test]
    fn a_refusal_is_bounded_and_names_its_containers() {
        let huge = format!("registry.example.com/{}:v1", "a".repeat(100_000));
        let report = Report::new(vec![row_of("big", &huge)], vec![]);
        let answer = decide(&review(), AdmissionMode::Deny, &report);
        let message = answer.status.expect("a refusal").message;
        // One container: the whole message's room.
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS, "{message}");
        assert!(
            message.starts_with("pullcheck: container big: image reg…aaaa"),
            "{message}"
        );
        assert_eq!(message.matches('…').count(), 1, "{message}");
        assert!(
            message.ends_with("a:v1 not found: no such repository"),
            "{message}"
        );

        let long = format!("registry.example.com/{}:v1", "b".repeat(5_000));
        let report = Report::new(
            vec![
                row_of("first", &long),
                row_of("second", "registry.example.com/x:1"),
            ],
            vec![],
        );
        let answer = decide(&review(), AdmissionMode::Deny, &report);
        let message = answer.status.expect("a refusal").message;
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines.len(), 3, "{message}");
        assert_eq!(
            lines[0],
            "pullcheck: 2 containers cannot pull their images:"
        );
        assert!(lines[1].starts_with("container first: image "), "{message}");
        assert!(
            lines[1].chars().count() <= MAX_REFUSAL_LINE_CHARS,
            "{message}"
        );
        assert_eq!(
            lines[2],
            "container second: image registry.example.com/x:1 not found: no such repository"
        );
    }

    /// The golden admission messages: a refusal of one container, a refusal of two with
    /// a third not verified (one line each, each fact once; the third a warning), and the
    /// warnings of warn mode for the same three. A wording change shows here.
    #[test]
    fn admission_messages_golden() {
        use pullcheck::report::Reason as R;
        let named = |name: &str, mut image: ImageReport| {
            image.origins[0].pod.as_mut().expect("a pod container").name = name.into();
            image
        };
        let mut tag = row("golang:1.2", Status::Missing, R::TagNotFound);
        tag.close_tags = vec!["1.22".into()];
        let tag = named("test", tag);
        let mut denied = row(
            "registry.example.com/team/app:v1",
            Status::Denied,
            R::AccessDenied,
        );
        denied.registry = Some("registry.example.com".into());
        let denied = named("app", denied);
        let mut refused = row(
            "registry.example.com/team/cache:v2",
            Status::Unreachable,
            R::ConnectionRefused,
        );
        refused.registry = Some("registry.example.com".into());
        let refused = named("cache", refused);

        let one = Report::new(vec![tag.clone()], vec![]);
        let answer = decide(&review(), AdmissionMode::Deny, &one);
        assert_eq!(
            answer.status.expect("a refusal").message,
            "pullcheck: container test: image golang:1.2 not found: no such tag; did you mean \
             1.22?"
        );

        let three = Report::new(vec![tag, denied, refused], vec![]);
        let answer = decide(&review(), AdmissionMode::Deny, &three);
        assert_eq!(
            answer.status.expect("a refusal").message,
            "pullcheck: 2 containers cannot pull their images:\n\
             container test: image golang:1.2 not found: no such tag; did you mean 1.22?\n\
             container app: image registry.example.com/team/app:v1 access denied by \
             registry.example.com (403)"
        );
        // What was not verified is a warning, refused or not.
        assert_eq!(
            answer.warnings,
            [
                "pullcheck: container cache: image reg…ample.com/team/cache:v2 not verified: \
              registry.example.com refused the connection"
            ]
        );

        let answer = decide(&review(), AdmissionMode::Warn, &three);
        assert!(answer.allowed);
        assert_eq!(
            answer.warnings,
            [
                "pullcheck: container test: image golang:1.2 not found: no such tag; did you \
                 mean 1.22?",
                "pullcheck: container app: image registry.example.com/team/app:v1 access \
                 denied by registry.example.com (403)",
                "pullcheck: container cache: image reg…ample.com/team/cache:v2 not verified: \
                 registry.example.com refused the connection",
            ]
        );
    }

    /// The webhook's briefs of the request's errors, golden: one per variant, short,
    /// without the positions of pullcheck's own copy of the object; the lookups' say only
    /// that the images were not verified.
    #[test]
    fn request_error_briefs_golden() {
        use pullcheck_sources::{NothingToCheck, SourceError};
        let positioned = SourceError {
            file: Some("Pod ci".into()),
            line: Some(3),
            column: Some(5),
            ..SourceError::new("not a Kubernetes object: no kind")
        };
        // Only what the webhook's request can give: it names no template and no
        // placeholder (a Docker runtime), so those variants are not here.
        let briefs: Vec<String> = [
            RequestError::Inputs(vec![(0, positioned.clone())]),
            RequestError::NothingToCheck(NothingToCheck {
                inputs: vec![],
                warnings: vec![],
            }),
            pullcheck_sources::CheckRequest {
                namespace: Some("a/b".into()),
                ..pullcheck_sources::CheckRequest::default()
            }
            .validate()
            .expect_err("no path segment"),
        ]
        .iter()
        .map(unreadable)
        .collect();
        assert_eq!(
            briefs,
            [
                "not a Kubernetes object: no kind",
                "no container image in it",
                "namespace \"a/b\" may not contain '/'",
            ]
        );
        assert_eq!(
            not_gathered(&RequestError::PullSecret(positioned)),
            "pullcheck: a pull secret is malformed; images not verified"
        );
        assert_eq!(
            not_gathered(&RequestError::LookupDeadline(Duration::from_secs(8))),
            "pullcheck: pull secrets not read in time; images not verified"
        );
        assert_eq!(
            not_gathered(&RequestError::Lookup(pullcheck_kube::KubeError::Config(
                "no context".into()
            ))),
            "pullcheck: pull secrets not readable; images not verified"
        );
    }

    /// Control characters and newlines in a reference or a container name are escaped
    /// in refusals and warnings, as in the CLI's text report: one line per container.
    #[test]
    fn control_characters_are_escaped() {
        let report = Report::new(
            vec![
                row_of("a\nb", "registry.example.com/x:1\u{1b}[31m"),
                row_of("c", "registry.example.com/y:1\nforged"),
            ],
            vec![],
        );
        let refusal = decide(&review(), AdmissionMode::Deny, &report);
        let message = refusal.status.expect("a refusal").message;
        assert_eq!(message.lines().count(), 3, "{message}");
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(message.contains("container a\\nb: image registry.example.com/x:1\\u{1b}[31m"));
        let warned = decide(&review(), AdmissionMode::Warn, &report);
        assert_eq!(warned.warnings.len(), 2, "{:?}", warned.warnings);
        for w in &warned.warnings {
            assert!(!w.chars().any(char::is_control), "{w}");
        }
        assert!(
            warned.warnings[1].contains("y:1\\nforged"),
            "{:?}",
            warned.warnings
        );
    }

    /// The report's version warnings are admission warnings, allowed or refused, after
    /// the images' lines, with the releases, host and kind; a control character in the
    /// host is escaped; a long host is shortened to the limit.
    #[test]
    fn version_warnings_are_admission_warnings() {
        let w = pullcheck::mirrors::VersionWarning::LoopbackDefaultHostOverPlainHttp {
            host: "127.0.0.1:5000".into(),
            hosts_dir: Some("/etc/containerd/certs.d".into()),
        };
        let mut report = Report::new(vec![row_of("c", "registry.example.com/x:1")], vec![]);
        report.version_warnings = vec![w.clone()];
        let expected = "pullcheck: containerd 1.6.0-1.6.8 differ at 127.0.0.1:5000 \
                        (loopback_default_host_over_plain_http)"
            .to_owned();
        assert!(expected.chars().count() <= MAX_WARNING_CHARS);
        let refused = decide(&review(), AdmissionMode::Deny, &report);
        assert!(!refused.allowed);
        assert_eq!(refused.warnings, vec![expected.clone()]);
        let warned = decide(&review(), AdmissionMode::Warn, &report);
        assert!(warned.allowed);
        assert_eq!(warned.warnings.len(), 2, "{:?}", warned.warnings);
        assert!(warned.warnings[0].starts_with("pullcheck: container c: "));
        assert_eq!(warned.warnings[1], expected);
        let mut fine = Report::new(vec![], vec![]);
        fine.version_warnings = vec![w];
        let allowed = decide(&review(), AdmissionMode::Deny, &fine);
        assert!(allowed.allowed);
        assert_eq!(allowed.warnings, vec![expected]);

        let tls = pullcheck::mirrors::VersionWarning::LoopbackDefaultHostOverTls {
            host: format!("localhost\u{1b}[31m:{}", "5".repeat(200)),
            hosts_dir: None,
        };
        let shown = version_warning(&tls);
        assert_eq!(
            shown,
            format!(
                "pullcheck: containerd 1.6.9-1.6.24 and 1.7.0-1.7.6 differ at \
                 localhost\\u{{…{} (loopback_default_host_over_tls)",
                "5".repeat(11)
            )
        );
        assert!(shown.chars().count() <= MAX_WARNING_CHARS, "{shown}");
    }

    /// A warning slightly over [`MAX_WARNING_CHARS`] keeps the finding's words: the
    /// reference gives way first, then the tail is cut between words.
    #[test]
    fn a_warning_keeps_the_reasons_words() {
        let reference = "registry.example.com/platform-team/payments/api:build-2026-11-30";
        let mut image = row(
            reference,
            Status::Unreachable,
            pullcheck::report::Reason::ServerError,
        );
        image.registry = Some("registry.example.com".into());
        let line = &lines_of(&image)[0];
        assert!(line.render(&line.reference).chars().count() + 11 > MAX_WARNING_CHARS);
        assert_eq!(
            warning(line),
            "pullcheck: container app: image reg…build-2026-11-30 not verified: \
             registry.example.com failed to answer (server error)"
        );
        // A finding too long even then is cut between words.
        image.registry = Some(format!("{}.example.com", "mirror ".repeat(20)));
        let w = warning(&lines_of(&image)[0]);
        assert!(w.chars().count() <= MAX_WARNING_CHARS, "{w}");
        assert!(w.ends_with("mirror…"), "{w}");
    }

    /// A warning too long is cut at a space, never inside a word.
    #[test]
    fn a_warning_is_cut_between_words() {
        let long = format!("pullcheck: {}", "word ".repeat(40));
        let cut = shorten(&long);
        assert!(cut.chars().count() <= MAX_WARNING_CHARS, "{cut}");
        assert!(cut.ends_with("word…"), "{cut}");
    }

    /// A row of [`row`] from `list`'s container `name`, with close tags.
    fn long_row(
        list: ContainerList,
        name: &str,
        reference: &str,
        close_tags: &[&str],
    ) -> ImageReport {
        let mut image = row(
            reference,
            Status::Missing,
            pullcheck::report::Reason::TagNotFound,
        );
        image.registry = Some("127.0.0.1:42439".into());
        image.close_tags = close_tags.iter().map(|t| (*t).to_owned()).collect();
        let pod = image.origins[0].pod.as_mut().expect("a pod container");
        pod.list = list;
        pod.name = name.into();
        image
    }

    /// Long names, references and hints in warnings, golden, each line from
    /// [`finding`]: the list's word stays whole and a long name loses its middle only;
    /// the reference keeps its repository and tag (it loses more of its registry);
    /// the hint names fewer tags before the reference gives way, and never ends in a
    /// bare `did you mean…` (rev23q findings 6, 19).
    #[test]
    fn long_parts_give_way_in_order_golden() {
        let warnings: Vec<String> = [
            long_row(
                ContainerList::Containers,
                "payments-api-worker",
                "127.0.0.1:42439/platform-team/payments/api-gateway-service:build-2026-11-30-0123456789ab",
                &["build-2026-11-30"],
            ),
            long_row(
                ContainerList::EphemeralContainers,
                &format!("debugger-{}", "n".repeat(54)),
                "127.0.0.1:42439/library/alpine:3.91",
                &["3.19", "3.20"],
            ),
            long_row(
                ContainerList::Containers,
                "app",
                "127.0.0.1:42439/library/alpine:release-2026-11-30-build-0001",
                &[
                    "release-2026-11-30-build-0002",
                    "release-2026-11-30-build-0003",
                    "release-2026-11-29-build-0001",
                ],
            ),
        ]
        .iter()
        .flat_map(lines_of)
        .map(|l| warning(&l))
        .collect();
        for w in &warnings {
            assert!(w.chars().count() <= MAX_WARNING_CHARS, "{w}");
        }
        assert_eq!(
            warnings,
            [
                "pullcheck: container payments-api-worker: image \
                 127…ateway-service:build-2026-11-30-0123456789ab not found: no such tag",
                "pullcheck: ephemeral container debugger-nnnnnnn…nnnnnnnnnnnnnnnn: image \
                 127…/library/alpine:3.91 not found: no such tag",
                "pullcheck: container app: image \
                 127…/library/alpine:release-2026-11-30-build-0001 not found: no such tag",
            ]
        );
        // With room, the hint is whole.
        let roomy = lines_of(&long_row(
            ContainerList::EphemeralContainers,
            &format!("debugger-{}", "n".repeat(54)),
            "127.0.0.1:42439/library/alpine:3.91",
            &["3.19", "3.20"],
        ))[0]
            .fitted(200);
        assert_eq!(
            roomy,
            format!(
                "ephemeral container debugger-{}: image 127.0.0.1:42439/library/alpine:3.91 \
                 not found: no such tag; did you mean 3.19 or 3.20?",
                "n".repeat(54)
            )
        );
    }

    /// A long early token (a 200-character name) loses its middle, never the words
    /// after it (rev23q finding 5).
    #[test]
    fn a_long_token_keeps_the_words_after_it() {
        let text = format!(
            "pullcheck: the object cannot be read: Pod/{}: spec.containers: expected a \
             sequence, found a map",
            "p".repeat(200)
        );
        assert_eq!(
            shorten(&text),
            "pullcheck: the object cannot be read: Pod/ppppppppppp…ppppppppppppppp: \
             spec.containers: expected a sequence, found a…"
        );
    }

    /// An invalid reference's words come from its error's kind, without the parser's
    /// message (which repeats the reference the line names already) (rev23q finding 7).
    #[test]
    fn an_invalid_reference_is_worded_from_its_kind() {
        let mut image = row(
            "alpine\n:x",
            Status::Invalid,
            pullcheck::report::Reason::InvalidReference,
        );
        image.error = Some(pullcheck::report::ReferenceErrorReport {
            kind: "invalid_format",
            message: "invalid reference format: repository name alpine\n:x ...".into(),
        });
        let lines: Vec<String> = lines_of(&image).iter().map(warning).collect();
        assert_eq!(
            lines,
            ["pullcheck: container app: image alpine\\n:x invalid: not in the reference format"]
        );
    }

    /// A refusal's header counts containers and image volumes apart (rev23q finding
    /// 20).
    #[test]
    fn a_refusal_counts_containers_and_image_volumes() {
        let container = long_row(ContainerList::Containers, "app", "127.0.0.1:42439/x:1", &[]);
        let volume = long_row(ContainerList::Volumes, "data", "127.0.0.1:42439/y:1", &[]);
        let report = Report::new(vec![container, volume], vec![]);
        let message = decide(&review(), AdmissionMode::Deny, &report)
            .status
            .expect("a refusal")
            .message;
        assert_eq!(
            message,
            "pullcheck: 1 container and 1 image volume cannot pull their images:\n\
             container app: image 127.0.0.1:42439/x:1 not found: no such tag\n\
             image volume data: image 127.0.0.1:42439/y:1 not found: no such tag"
        );
        assert_eq!(counted(3, 0), "3 containers");
        assert_eq!(counted(0, 1), "1 image volume");
        assert_eq!(counted(2, 2), "2 containers and 2 image volumes");
    }

    /// The golden admission lines of an invalid container: the container from the
    /// origin's fields, the problem's words without pullcheck's own position.
    #[tokio::test]
    async fn an_invalid_container_is_named_from_its_fields_without_a_position() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  \
                    initContainers:\n    - name: clone\n      image: alpine:3.19\n      \
                    imagePullPolicy: Sometimes\n  containers:\n    - name: app\n";
        let manifests = pullcheck_kube::read_manifests("Pod default", text).expect("reads");
        let uses = manifests.workloads[0].images.clone();
        let checker = pullcheck::Checker::new(
            pullcheck::CheckerOptions::default(),
            pullcheck::resolve::Resolver::default(),
            pullcheck::credentials::NodeCredentials::empty(),
        )
        .expect("checker");
        let report = checker
            .check(uses, &pullcheck::CheckOptions::default())
            .await;
        let lines: Vec<String> = report
            .images
            .iter()
            .flat_map(lines_of)
            .map(|l| l.render(&l.reference))
            .collect();
        assert_eq!(
            lines,
            [
                "container app: no image",
                "init container clone: image alpine:3.19 invalid: unsupported imagePullPolicy \
                 \"Sometimes\": must be Always, IfNotPresent or Never",
            ]
        );
        // The report's own detail keeps the position, for the CLI and the API.
        let clone = &report.images[1];
        let at = clone.problems[0].at.as_ref().expect("positioned");
        assert_eq!((at.file.as_str(), at.line), ("Pod default", Some(8)));
        assert!(
            clone.detail.starts_with("Pod default:8:"),
            "{}",
            clone.detail
        );
    }

    #[test]
    fn exempt_patterns_match_canonical_references() {
        let a = Admission::new(&AdmissionOptions {
            exempt_images: vec![
                DEFAULT_EXEMPT_IMAGE.to_owned(),
                "registry.example.com/tools/*".to_owned(),
            ],
            ..AdmissionOptions::default()
        })
        .expect("compiles");
        assert!(a.is_exempt("kubernetes/pause"));
        assert!(a.is_exempt("docker.io/kubernetes/pause:latest"));
        assert!(!a.is_exempt("kubernetes/pause:3.9"));
        assert!(a.is_exempt("registry.example.com/tools/git:1"));
        assert!(!a.is_exempt("registry.example.com/tools/a/b:1"));
        assert!(!a.is_exempt("golang:1.22"));
    }

    #[test]
    fn an_update_keeps_only_changed_images() {
        let new = serde_json::json!({"spec": {"containers": [
            {"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]}});
        let old = serde_json::json!({"spec": {"containers": [
            {"name": "a", "image": "x:1"}, {"name": "b", "image": "pause"}]}});
        let old = pod_spec(&old, &["spec"]);
        let reduced = reduce(new.as_object().expect("map"), &["spec"], old).expect("one left");
        assert_eq!(
            reduced["spec"]["containers"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(reduced["spec"]["containers"][0]["name"], "b");
        let same = pod_spec(&new, &["spec"]);
        assert!(reduce(new.as_object().expect("map"), &["spec"], same).is_none());
    }

    #[test]
    fn an_update_keeps_only_changed_image_volumes() {
        let template = |reference: &str| {
            serde_json::json!({"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "x:1"}],
            "volumes": [
                {"name": "tmp", "emptyDir": {}},
                {"name": "models", "image": {"reference": reference}},
                {"name": "weights", "image": {"reference": "w:1"}}
            ]}}}})
        };
        let (new, old) = (template("m:2"), template("m:1"));
        let reduced = reduce(
            new.as_object().expect("map"),
            TEMPLATE,
            pod_spec(&old, TEMPLATE),
        )
        .expect("the changed volume is left");
        let spec = &reduced["spec"]["template"]["spec"];
        assert_eq!(spec["containers"].as_array().map(Vec::len), Some(0));
        let names: Vec<_> = spec["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .map(|v| v["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(names, ["tmp", "models"]);
        assert_eq!(container_count(&reduced, TEMPLATE), 1);
        assert_eq!(container_count(&new, TEMPLATE), 3);
        let same = pod_spec(&new, TEMPLATE);
        assert!(reduce(new.as_object().expect("map"), TEMPLATE, same).is_none());
    }
}
