//! Query: asks the registries about every planned reference, concurrently, within one
//! overall deadline.
//!
//! References are grouped by (endpoint, credential): each group is pinged and
//! authenticated once, for all of its repositories together, then gets one manifest
//! `HEAD` per reference. That is the protocol floor: one ping and one token request per
//! registry, one `HEAD` per image.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use pullcheck_reference::Reference;
use pullcheck_registry::{Answer, Client, Credential, Endpoint, Missing};
use tokio::sync::Semaphore;

use crate::plan::query_key;
use crate::report::{MissingPart, Status};
use crate::resolve::{CredentialSource, Keyring, resolve};

/// Settings of the query stage.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// At most this many requests in flight at once, over all registries. At least 1.
    pub concurrency: usize,
    /// Past this, references without an answer are `unreachable`.
    pub deadline: Duration,
    /// `--insecure-registry` values (`host` or `host:port`).
    pub insecure_registries: Vec<String>,
}

/// The answer for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The status.
    pub status: Status,
    /// What is missing.
    pub missing: Option<MissingPart>,
    /// The manifest digest, when present.
    pub digest: Option<String>,
    /// The host that answered (or was asked, when nothing answered).
    pub registry: Option<String>,
    /// Human detail; never a secret.
    pub detail: String,
    /// The credential used; `None` for anonymous.
    pub credential: Option<CredentialSource>,
}

type Outcomes = Arc<Mutex<HashMap<String, Outcome>>>;

/// Queries every reference; every one of them gets an [`Outcome`], keyed by
/// [`query_key`].
pub async fn run(
    client: &Client,
    keyring: &Keyring,
    references: &[&Reference],
    options: &QueryOptions,
) -> HashMap<String, Outcome> {
    let mut groups: Vec<Group> = Vec::new();
    for reference in references {
        let resolution = resolve(reference, keyring, &options.insecure_registries);
        let Some(endpoint) = resolution.endpoints.into_iter().next() else {
            continue;
        };
        let (credential, source) = match resolution.credentials.into_iter().next() {
            Some(c) => (c.credential, c.source),
            None => (Credential::Anonymous, None),
        };
        match groups
            .iter_mut()
            .find(|g| g.endpoint == endpoint.endpoint && g.credential == credential)
        {
            Some(g) => g.references.push((*reference).clone()),
            None => groups.push(Group {
                endpoint: endpoint.endpoint,
                credential,
                source,
                references: vec![(*reference).clone()],
            }),
        }
    }

    let outcomes: Outcomes = Arc::new(Mutex::new(HashMap::new()));
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let work = join_all(
        groups
            .iter()
            .map(|g| query_group(client, g, permits.clone(), outcomes.clone())),
    );
    let timed_out = tokio::time::timeout(options.deadline, work).await.is_err();

    let mut outcomes = std::mem::take(&mut *lock(&outcomes));
    for g in &groups {
        for r in &g.references {
            outcomes.entry(query_key(r)).or_insert_with(|| Outcome {
                status: Status::Unreachable,
                missing: None,
                digest: None,
                registry: Some(g.endpoint.host.clone()),
                detail: if timed_out {
                    format!(
                        "no answer from {} within the overall deadline of {} ms",
                        g.endpoint.host,
                        options.deadline.as_millis()
                    )
                } else {
                    format!("no answer from {}", g.endpoint.host)
                },
                credential: g.source.clone(),
            });
        }
    }
    outcomes
}

struct Group {
    endpoint: Endpoint,
    credential: Credential,
    source: Option<CredentialSource>,
    references: Vec<Reference>,
}

fn lock(outcomes: &Outcomes) -> std::sync::MutexGuard<'_, HashMap<String, Outcome>> {
    // A poisoned lock only means another task panicked mid-insert; the map is still sound.
    outcomes.lock().unwrap_or_else(|p| p.into_inner())
}

async fn query_group(client: &Client, group: &Group, permits: Arc<Semaphore>, outcomes: Outcomes) {
    let mut repositories: Vec<String> = group
        .references
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    repositories.sort();
    repositories.dedup();
    let host = group.endpoint.host.clone();
    let session = {
        let _permit = permits.acquire().await;
        client
            .authorize(&group.endpoint, &group.credential, &repositories)
            .await
    };
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            let mut map = lock(&outcomes);
            for r in &group.references {
                map.insert(
                    query_key(r),
                    Outcome {
                        status: map_status(e.status),
                        missing: None,
                        digest: None,
                        registry: Some(host.clone()),
                        detail: e.message.clone(),
                        credential: group.source.clone(),
                    },
                );
            }
            return;
        }
    };
    join_all(group.references.iter().map(|r| {
        let permits = permits.clone();
        let outcomes = outcomes.clone();
        let session = session.clone();
        let host = host.clone();
        async move {
            let answer = {
                let _permit = permits.acquire().await;
                session.check(r.path(), r.manifest_reference()).await
            };
            let outcome = outcome_of(answer, host, group.source.clone());
            lock(&outcomes).insert(query_key(r), outcome);
        }
    }))
    .await;
}

fn outcome_of(answer: Answer, host: String, credential: Option<CredentialSource>) -> Outcome {
    Outcome {
        status: map_status(answer.status),
        missing: answer.missing.map(|m| match m {
            Missing::Tag => MissingPart::Tag,
            Missing::Digest => MissingPart::Digest,
            Missing::Repository => MissingPart::Repository,
        }),
        digest: answer.digest,
        registry: Some(host),
        detail: answer.detail,
        credential,
    }
}

fn map_status(status: pullcheck_registry::Status) -> Status {
    use pullcheck_registry::Status as S;
    match status {
        S::Present => Status::Present,
        S::Missing => Status::Missing,
        S::NoAccess => Status::NoAccess,
        S::Denied => Status::Denied,
        S::Unreachable => Status::Unreachable,
    }
}
