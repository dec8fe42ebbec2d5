//! `GET /readyz`: whether the service should get traffic, and if not, what is not
//! ready, why, and what fixes it.
//!
//! The answer is JSON: `{"ready": true}` with 200, or 503 with
//! `{"ready": false, "reasons": [{"component", "reason", "fix"}]}`. Components:
//! `kubernetes_api` (a cluster is configured and its API server has not answered yet;
//! `reason` is the last error) and `shutdown` (the service is draining). A change of
//! state is logged once (WARN when a component becomes not ready or its error changes
//! kind, INFO when it becomes ready), never on every probe.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pullcheck_kube::{Cluster, KubeError};
use serde::Serialize;

use crate::{AppState, ServeSetting};

/// How often readiness asks the API server until it answers.
const READY_POLL: Duration = Duration::from_secs(2);

/// Why a component is not ready.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Reason {
    /// What is not ready: `kubernetes_api` or `shutdown`.
    pub component: &'static str,
    /// Why, in words (for `kubernetes_api`, the last error).
    pub reason: String,
    /// What to do about it (the service's settings named by
    /// [`crate::ServeOptions::setting_name`]).
    pub fix: String,
}

/// The readiness of the parts that can be not ready.
#[derive(Debug)]
pub(crate) struct Readiness {
    /// The Kubernetes API's reason, `None` when it answered (or none is configured).
    kubernetes: Mutex<Option<Reason>>,
    /// What fixes an API server that does not answer ([`kube_fix`]).
    kube_fix: String,
}

/// What fixes an API server that does not answer, the kubeconfig setting named by `name`.
fn kube_fix(name: fn(ServeSetting) -> &'static str) -> String {
    format!(
        "check that the kubeconfig ({}, or the in-cluster service account) names a \
         reachable API server, that DNS and network policies let this Pod reach it, and its \
         CA and token; requests naming a namespace need it",
        name(ServeSetting::Kubeconfig)
    )
}

impl Readiness {
    /// Not ready until the API server answers, with a cluster; ready without one.
    /// `name` names the service's settings in the fix.
    pub(crate) fn new(
        waits_for_cluster: bool,
        name: fn(ServeSetting) -> &'static str,
    ) -> Readiness {
        let kube_fix = kube_fix(name);
        Readiness {
            kubernetes: Mutex::new(waits_for_cluster.then(|| Reason {
                component: "kubernetes_api",
                reason: "the Kubernetes API server has not been asked yet".to_owned(),
                fix: kube_fix.clone(),
            })),
            kube_fix,
        }
    }

    fn kubernetes(&self) -> std::sync::MutexGuard<'_, Option<Reason>> {
        self.kubernetes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is not ready now (`draining`: the service is shutting down).
    pub(crate) fn reasons(&self, draining: bool) -> Vec<Reason> {
        let mut reasons: Vec<Reason> = self.kubernetes().iter().cloned().collect();
        if draining {
            reasons.push(Reason {
                component: "shutdown",
                reason: "the service is shutting down".to_owned(),
                fix: "none: send traffic to another replica".to_owned(),
            });
        }
        reasons
    }
}

/// Asks the API server until it answers at all (any HTTP answer, even 403), then marks
/// it ready. Logs the first failure, and again only when the kind of error changes.
pub(crate) async fn probe_api_server(cluster: Cluster, state: Arc<AppState>) {
    let mut logged: Option<std::mem::Discriminant<KubeError>> = None;
    loop {
        match cluster
            .service_account(cluster.namespace(), pullcheck_kube::DEFAULT_SERVICE_ACCOUNT)
            .await
        {
            Err(e @ (KubeError::Unreachable { .. } | KubeError::Config(_))) => {
                let kind = std::mem::discriminant(&e);
                if logged != Some(kind) {
                    tracing::warn!(
                        "not ready: the Kubernetes API server did not answer: {e}; asking \
                         again every {}s; {}",
                        READY_POLL.as_secs(),
                        state.readiness.kube_fix
                    );
                    logged = Some(kind);
                }
                *state.readiness.kubernetes() = Some(Reason {
                    component: "kubernetes_api",
                    reason: e.to_string(),
                    fix: state.readiness.kube_fix.clone(),
                });
            }
            Err(e) => {
                tracing::info!("Kubernetes API server answered: {e}");
                break;
            }
            Ok(_) => break,
        }
        tokio::time::sleep(READY_POLL).await;
    }
    tracing::info!("ready: the Kubernetes API server answered");
    *state.readiness.kubernetes() = None;
}

#[derive(Serialize)]
struct Answer {
    ready: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<Reason>,
}

/// `GET /readyz`.
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let reasons = state.readiness.reasons(state.lifecycle.is_draining());
    let status = if reasons.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let answer = Answer {
        ready: reasons.is_empty(),
        reasons,
    };
    (status, axum::Json(answer)).into_response()
}
