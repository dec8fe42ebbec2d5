//! Query: asks the registries about every planned reference, concurrently, within one
//! overall deadline.
//!
//! Each reference has a list of attempts: its routes (mirrors, then the primary) and, on
//! each route, its credentials in keyring order (anonymous when there are none). Like
//! the container runtime, the first attempt that finds the manifest wins; like the
//! kubelet, the next credential is tried after a failure, and anonymous is never tried
//! after credentials fail. When every attempt fails, the most meaningful failure is
//! reported (a definite 404 outranks a refusal, which outranks a network error), with
//! every attempt's answer in the detail.
//!
//! Attempts run in rounds: in each round, the next attempt of every unfinished
//! reference is grouped by (endpoint, credential), each group is authorized once for
//! all its repositories, and every `HEAD` of the round runs concurrently under one
//! semaphore. With no mirrors and at most one credential per registry there is one
//! round: one ping and one token request per registry (per 100 repositories: see
//! `pullcheck_registry::Client::authorize`), one `HEAD` per image, which is the
//! protocol floor.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use pullcheck_reference::Reference;
use pullcheck_registry::{Answer, AuthorizeError, Client, Credential, Endpoint, Missing, Session};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::plan::query_key;
use crate::report::{MissingPart, Status};
use crate::resolve::{CredentialSource, Credentials, Resolution, Resolver, resolve};

/// Settings of the query stage.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// At most this many requests in flight at once, over all registries. At least 1.
    pub concurrency: usize,
    /// Past this, references without an answer are `unreachable`. Too long to add to
    /// the clock: no deadline ([`crate::deadline_at`]).
    pub deadline: Duration,
    /// When the deadline's clock started; `None`: when [`run`] starts.
    pub deadline_start: Option<std::time::Instant>,
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

/// One (route, credential) pair to try.
#[derive(Debug, Clone)]
struct Attempt {
    endpoint: Endpoint,
    repository: String,
    credential: Credential,
    source: Option<CredentialSource>,
}

/// A reference still being asked about.
#[derive(Debug)]
struct Pending {
    reference: Reference,
    attempts: VecDeque<Attempt>,
    /// Every failed attempt so far: (where, outcome).
    failures: Vec<(String, Outcome)>,
    /// The host of the attempt in flight, for the deadline message.
    asking: String,
}

type Finished = HashMap<String, Outcome>;

/// The key of one (set, reference) query in the map [`run`] returns.
pub fn outcome_key(set: usize, reference: &Reference) -> String {
    format!("{set} {}", query_key(reference))
}

/// Queries every (set, reference) pair, with the set's credentials; every one of them
/// gets an [`Outcome`], keyed by [`outcome_key`].
pub async fn run(
    client: &Client,
    resolver: &Resolver,
    credentials: &[Credentials],
    references: &[(usize, &Reference)],
    options: &QueryOptions,
) -> HashMap<String, Outcome> {
    let start = options
        .deadline_start
        .unwrap_or_else(std::time::Instant::now);
    let deadline = Instant::from_std(crate::deadline_at(start, options.deadline));
    let mut finished: Finished = HashMap::new();
    let mut pending: HashMap<String, Pending> = HashMap::new();

    let resolutions = references.iter().map(|(set, reference)| async move {
        let resolution = match credentials.get(*set) {
            Some(c) => resolve(reference, resolver, c).await,
            None => Ok(Resolution::Routes(Vec::new())),
        };
        (outcome_key(*set, reference), *reference, resolution)
    });
    let resolutions = match tokio::time::timeout_at(deadline, join_all(resolutions)).await {
        Ok(r) => r,
        Err(_) => {
            for (set, reference) in references {
                finished.insert(
                    outcome_key(*set, reference),
                    failure(
                        Status::Unreachable,
                        format!(
                            "credential helpers did not answer within the overall deadline \
                             of {} ms",
                            options.deadline.as_millis()
                        ),
                    ),
                );
            }
            return finished;
        }
    };
    for (key, reference, resolution) in resolutions {
        match resolution {
            Err(e) => {
                finished.insert(
                    key,
                    failure(Status::Unreachable, format!("not checked: {e}")),
                );
            }
            Ok(Resolution::Blocked { rule }) => {
                finished.insert(
                    key,
                    failure(
                        Status::Blocked,
                        format!("blocked by {rule}; no request was sent"),
                    ),
                );
            }
            Ok(Resolution::Unresolvable { rule, reason }) => {
                finished.insert(
                    key,
                    failure(
                        Status::Invalid,
                        format!(
                            "the runtime cannot pull this: {reason} ({rule}); no request was sent"
                        ),
                    ),
                );
            }
            Ok(Resolution::Routes(routes)) => {
                let mut attempts = VecDeque::new();
                for route in routes {
                    if route.credentials.is_empty() {
                        attempts.push_back(Attempt {
                            endpoint: route.endpoint.endpoint.clone(),
                            repository: route.repository.clone(),
                            credential: Credential::Anonymous,
                            source: None,
                        });
                    }
                    for c in route.credentials {
                        attempts.push_back(Attempt {
                            endpoint: route.endpoint.endpoint.clone(),
                            repository: route.repository.clone(),
                            credential: c.credential,
                            source: Some(c.source),
                        });
                    }
                }
                // The order in which this reference will be asked: endpoints and the
                // sources of their credentials, never a secret.
                tracing::trace!(
                    reference = %reference.canonical(),
                    attempts = %attempts
                        .iter()
                        .map(|a| match &a.source {
                            Some(s) => format!("{} with {} key {:?}", a.endpoint.host, s.source, s.key),
                            None => format!("{} anonymously", a.endpoint.host),
                        })
                        .collect::<Vec<_>>()
                        .join(", then "),
                    "plan"
                );
                pending.insert(
                    key,
                    Pending {
                        reference: reference.clone(),
                        attempts,
                        failures: Vec::new(),
                        asking: String::new(),
                    },
                );
            }
        }
    }

    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut sessions: HashMap<(Endpoint, Credential), Result<Session, AuthorizeError>> =
        HashMap::new();
    let mut timed_out = false;
    while !pending.is_empty() && !timed_out {
        // This round: the next attempt of every pending reference, grouped.
        let mut groups: Vec<Group> = Vec::new();
        for (key, p) in pending.iter_mut() {
            let Some(attempt) = p.attempts.pop_front() else {
                continue;
            };
            p.asking = attempt.endpoint.host.clone();
            let slot = (attempt.endpoint.clone(), attempt.credential.clone());
            let job = Job {
                key: key.clone(),
                repository: attempt.repository.clone(),
                manifest_reference: p.reference.manifest_reference().to_string(),
            };
            match groups.iter_mut().find(|g| g.slot == slot) {
                Some(g) => g.jobs.push(job),
                None => groups.push(Group {
                    slot,
                    source: attempt.source,
                    jobs: vec![job],
                }),
            }
        }
        if groups.is_empty() {
            break;
        }
        let answers: Arc<Mutex<Vec<(String, String, Outcome)>>> = Arc::default();
        let round = join_all(groups.iter().map(|g| {
            let cached = sessions.get(&g.slot).cloned();
            run_group(
                client,
                g,
                cached,
                permits.clone(),
                answers.clone(),
                deadline,
            )
        }));
        match tokio::time::timeout_at(deadline, round).await {
            Ok(authorized) => {
                for (slot, session) in authorized {
                    sessions.entry(slot).or_insert(session);
                }
            }
            Err(_) => timed_out = true,
        }
        let answers = std::mem::take(&mut *answers.lock().unwrap_or_else(|p| p.into_inner()));
        for (key, place, outcome) in answers {
            let Some(p) = pending.get_mut(&key) else {
                continue;
            };
            let done = outcome.status == Status::Present || p.attempts.is_empty();
            p.failures.push((place, outcome));
            if done && let Some(p) = pending.remove(&key) {
                finished.insert(key, choose(p.failures));
            }
        }
    }
    for (key, p) in pending {
        let waited = format!(
            "no answer within the overall deadline of {} ms",
            options.deadline.as_millis()
        );
        let mut failures = p.failures;
        let host = if p.asking.is_empty() {
            p.attempts
                .front()
                .map(|a| a.endpoint.host.clone())
                .unwrap_or_default()
        } else {
            p.asking.clone()
        };
        failures.push((
            host.clone(),
            Outcome {
                status: Status::Unreachable,
                missing: None,
                digest: None,
                registry: Some(host.clone()),
                detail: if timed_out {
                    format!("{waited} from {host}")
                } else {
                    format!("no answer from {host}")
                },
                credential: None,
            },
        ));
        finished.insert(key, choose(failures));
    }
    finished
}

/// An outcome without an answer from any registry.
fn failure(status: Status, detail: String) -> Outcome {
    Outcome {
        status,
        missing: None,
        digest: None,
        registry: None,
        detail,
        credential: None,
    }
}

/// How meaningful a failure is: a definite answer outranks a refusal, which outranks a
/// network error.
fn rank(status: Status) -> u8 {
    match status {
        Status::Present => 5,
        Status::Missing => 4,
        Status::NoAccess => 3,
        Status::Denied => 2,
        Status::Blocked => 1,
        _ => 0,
    }
}

/// The outcome to report from every attempt's answer: the present one, else the most
/// meaningful failure, with the other attempts listed in the detail.
fn choose(mut attempts: Vec<(String, Outcome)>) -> Outcome {
    let best = attempts
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, o))| (rank(o.status), std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);
    if attempts.is_empty() {
        return Outcome {
            status: Status::Unreachable,
            missing: None,
            digest: None,
            registry: None,
            detail: "no endpoint to ask".into(),
            credential: None,
        };
    }
    let others: Vec<String> = attempts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .map(|(_, (place, o))| format!("{place}: {} ({})", o.status.as_str(), o.detail))
        .collect();
    let mut chosen = attempts.swap_remove(best).1;
    if !others.is_empty() {
        let verb = if chosen.status == Status::Present {
            "after"
        } else {
            "also tried"
        };
        chosen.detail = format!("{}; {verb}: {}", chosen.detail, others.join("; "));
    }
    chosen
}

/// A (endpoint, credential) pair and the references to ask it about this round.
struct Group {
    slot: (Endpoint, Credential),
    source: Option<CredentialSource>,
    jobs: Vec<Job>,
}

struct Job {
    key: String,
    repository: String,
    manifest_reference: String,
}

type Answers = Arc<Mutex<Vec<(String, String, Outcome)>>>;

/// Authorizes the group (unless a session is cached) and asks about each job; returns
/// the session for later rounds.
async fn run_group(
    client: &Client,
    group: &Group,
    cached: Option<Result<Session, AuthorizeError>>,
    permits: Arc<Semaphore>,
    answers: Answers,
    deadline: Instant,
) -> ((Endpoint, Credential), Result<Session, AuthorizeError>) {
    // The client stops retrying and backing off at the same deadline.
    let deadline = deadline.into_std();
    let (endpoint, credential) = &group.slot;
    let host = endpoint.host.clone();
    // Two endpoints on one host differ by their API path (containerd `override_path`).
    let at = if endpoint.base_path == "/v2/" {
        host.clone()
    } else {
        format!("{host}{}", endpoint.base_path)
    };
    let place = match &group.source {
        Some(s) => format!("{at} with {} key {:?}", s.source, s.key),
        None => at,
    };
    tracing::debug!(
        endpoint = %place,
        images = group.jobs.len(),
        session = if cached.is_some() { "reused" } else { "new" },
        "asking"
    );
    let session = match cached {
        Some(s) => s,
        None => {
            let mut repositories: Vec<String> =
                group.jobs.iter().map(|j| j.repository.clone()).collect();
            repositories.sort();
            repositories.dedup();
            let _permit = permits.acquire().await;
            client
                .authorize_before(endpoint, credential, &repositories, deadline)
                .await
        }
    };
    match &session {
        Err(e) => {
            let mut list = answers.lock().unwrap_or_else(|p| p.into_inner());
            for job in &group.jobs {
                list.push((
                    job.key.clone(),
                    place.clone(),
                    Outcome {
                        status: map_status(e.status),
                        missing: None,
                        digest: None,
                        registry: Some(host.clone()),
                        detail: e.message.clone(),
                        credential: group.source.clone(),
                    },
                ));
            }
        }
        Ok(session) => {
            join_all(group.jobs.iter().map(|job| {
                let permits = permits.clone();
                let answers = answers.clone();
                let host = host.clone();
                let place = place.clone();
                async move {
                    let answer = {
                        let _permit = permits.acquire().await;
                        session
                            .check_before(&job.repository, &job.manifest_reference, deadline)
                            .await
                    };
                    let outcome = outcome_of(answer, host, group.source.clone());
                    tracing::trace!(
                        endpoint = %place,
                        repository = %job.repository,
                        reference = %job.manifest_reference,
                        status = ?outcome.status,
                        detail = %outcome.detail,
                        "answer"
                    );
                    answers.lock().unwrap_or_else(|p| p.into_inner()).push((
                        job.key.clone(),
                        place,
                        outcome,
                    ));
                }
            }))
            .await;
        }
    }
    (group.slot.clone(), session)
}

fn outcome_of(answer: Answer, host: String, credential: Option<CredentialSource>) -> Outcome {
    Outcome {
        status: map_status(answer.status),
        missing: answer.missing.map(|m| match m {
            Missing::Tag => MissingPart::Tag,
            Missing::Digest => MissingPart::Digest,
            Missing::Repository => MissingPart::Repository,
            Missing::Platform => MissingPart::Platform,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Status, detail: &str) -> Outcome {
        Outcome {
            status,
            missing: None,
            digest: None,
            registry: None,
            detail: detail.into(),
            credential: None,
        }
    }

    #[test]
    fn a_definite_404_outranks_a_network_error() {
        let chosen = choose(vec![
            (
                "mirror".into(),
                outcome(Status::Unreachable, "connection refused"),
            ),
            ("primary".into(), outcome(Status::Missing, "tag not found")),
        ]);
        assert_eq!(chosen.status, Status::Missing);
        assert_eq!(
            chosen.detail,
            "tag not found; also tried: mirror: unreachable (connection refused)"
        );
    }

    #[test]
    fn present_wins_and_names_earlier_failures() {
        let chosen = choose(vec![
            ("a".into(), outcome(Status::Denied, "rejected")),
            ("b".into(), outcome(Status::Present, "HEAD 200")),
        ]);
        assert_eq!(chosen.status, Status::Present);
        assert_eq!(chosen.detail, "HEAD 200; after: a: denied (rejected)");
    }

    #[test]
    fn among_equals_the_first_attempt_is_reported() {
        let chosen = choose(vec![
            ("a".into(), outcome(Status::NoAccess, "first")),
            ("b".into(), outcome(Status::NoAccess, "second")),
        ]);
        assert!(chosen.detail.starts_with("first;"), "{}", chosen.detail);
    }
}
