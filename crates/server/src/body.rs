//! The router's layers for bodies and the lifecycle: the body read whole under its own
//! deadline before a handler (and its check slot) sees the request, and the answers
//! of a service that is shutting down.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;

use crate::AppState;
use crate::api::ApiError;

/// A 503 with `Retry-After: 1`, and `Connection: close` on HTTP/1.
fn unavailable(version: Version, message: impl Into<String>) -> Response {
    let mut response = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    close_on_http1(version, &mut response);
    response
}

/// `Connection: close` on an HTTP/1 answer (HTTP/2 has no such header; it ends
/// connections with GOAWAY).
fn close_on_http1(version: Version, response: &mut Response) {
    if version <= Version::HTTP_11 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// Reads the body whole within `--body-read-timeout`, at most `--max-body` bytes, while
/// holding one of `--max-body-reads` read slots (so that at most that many bodies are
/// being received into memory at once), then hands the request on with the bytes: the
/// handler's check slot is taken only for a body that has arrived. A `Content-Length`
/// over `--max-body` gets 413 before any of the body is read. A body still
/// arriving at the deadline gets 408 (and the connection closed), one over the limit
/// 413, all read slots taken 503 with `Retry-After`. With `json_only`, a content type
/// other than JSON gets 415 before any of the body is read.
pub(crate) async fn read_body(
    State((state, json_only)): State<(Arc<AppState>, bool)>,
    request: Request,
    next: Next,
) -> Response {
    let version = request.version();
    if request.method() != Method::POST {
        // The route's own answer (405).
        return next.run(request).await;
    }
    if json_only && !crate::api::is_json(request.headers()) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON: Content-Type: application/json",
        )
        .into_response();
    }
    // The API routes take `--max-body`; the admission routes `--admission-max-body`.
    let (max_body, flag, label) = match (&state.admission, json_only) {
        (Some(admission), false) => (
            admission.max_body,
            crate::ServeSetting::AdmissionMaxBody,
            Some(crate::metrics::LimitLabel::AdmissionMaxBody),
        ),
        _ => (state.max_body, crate::ServeSetting::MaxBody, None),
    };
    let too_large = |count: Option<usize>| {
        if let Some(label) = label {
            state.metrics.over_limit(label);
        }
        ApiError::over_limit(
            "bytes of body",
            crate::api::Limit {
                setting: flag,
                limit: max_body,
                count,
            },
            state.setting_name,
        )
        .into_response()
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(length) = declared.filter(|n| *n > max_body as u64) {
        return too_large(Some(usize::try_from(length).unwrap_or(usize::MAX)));
    }
    // An admission body takes its review slot (--admission-max-reviews), never one of
    // the API's --max-body-reads: the routes that need no token cannot lock the API's
    // callers out.
    // A webhook that requires client certificates refuses a request without one here,
    // before it takes a review slot or reads a byte of its body.
    let review_slot = match (&state.admission, json_only) {
        (Some(admission), false) => {
            let tls = request
                .extensions()
                .get::<Arc<crate::conn::TlsInfo>>()
                .map(|info| &**info);
            if let Some(refused) = admission.certificate_refusal(&state, tls) {
                return refused;
            }
            match admission.review_slot(&state) {
                Ok(slot) => Some(slot),
                Err(answer) => return *answer,
            }
        }
        _ => None,
    };
    let read_slot = if review_slot.is_some() {
        None
    } else {
        let Ok(slot) = state.body_reads.clone().try_acquire_owned() else {
            crate::log_overload("body reads", state.max_body_reads);
            return unavailable(
                version,
                format!(
                    "{} request bodies are being received ({}); try again",
                    state.max_body_reads,
                    state.name(crate::ServeSetting::MaxBodyReads)
                ),
            );
        };
        Some(slot)
    };
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, max_body);
    let read = tokio::time::timeout(state.body_read_timeout, limited.collect()).await;
    drop(read_slot);
    let bytes = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if is_length_limit(e.as_ref()) => return too_large(None),
        Ok(Err(e)) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("cannot read the body: {e}"),
            )
            .into_response();
        }
        Err(_) => {
            let mut response = ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the body did not arrive within {} ({})",
                    state.name(crate::ServeSetting::BodyReadTimeout),
                    pullcheck_sources::format_duration(state.body_read_timeout)
                ),
            )
            .into_response();
            close_on_http1(version, &mut response);
            return response;
        }
    };
    let mut request = Request::from_parts(parts, axum::body::Body::from(bytes));
    if let Some(slot) = review_slot {
        request.extensions_mut().insert(slot);
    }
    next.run(request).await
}

/// Whether a body error is its size limit.
fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The API routes during a shutdown: a new request gets 503 with `Retry-After` (and
/// `Connection: close` on HTTP/1), so that the caller retries on another replica; one
/// still running when `--shutdown-grace` ends is answered 503 the same way (its check
/// is dropped and counted as abandoned).
pub(crate) async fn shutdown_gate(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let version = request.version();
    if state.lifecycle.is_draining() {
        return unavailable(
            version,
            "the service is shutting down; try again (another replica)",
        );
    }
    tokio::select! {
        response = next.run(request) => {
            let mut response = response;
            if state.lifecycle.is_draining() {
                close_on_http1(version, &mut response);
            }
            response
        }
        () = state.lifecycle.grace_over() => unavailable(
            version,
            format!(
                "the service shut down before this request was answered ({}); try again",
                state.name(crate::ServeSetting::ShutdownGrace)
            ),
        ),
    }
}
