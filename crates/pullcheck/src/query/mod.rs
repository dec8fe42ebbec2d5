//! Query: asks the registries about every planned reference, concurrently, within one
//! overall deadline.
//!
//! Each reference has a list of attempts: its routes (mirrors, then the primary) and, on
//! each route, its credentials in keyring order (anonymous when there are none). Like
//! the container runtime, the first attempt that finds the manifest wins; like the
//! kubelet, the next credential is tried after a failure, and anonymous is never tried
//! after credentials fail. When every attempt fails, the most meaningful failure is
//! reported (a definite 404 outranks a refusal, which outranks a network error; a
//! mirror's answer does not outrank a primary that gave none), with every attempt's
//! answer in the detail.
//!
//! [`run`] goes through four phases, one function each:
//!
//! 1. [`resolve_one`]: every reference's routes and credentials (credential helpers
//!    and provider plugins run here), concurrently and each bounded on its own (by the
//!    deadline, plus a moment for a timed-out plugin to be reaped), so that a helper or
//!    plugin that hangs holds up only the references it serves: each reference joins
//!    the rounds as soon as it is resolved;
//! 2. [`Rounds::add`] and [`attempts_of`]: each resolution becomes a final outcome
//!    (blocked, unresolvable, a helper's failure) or a list of attempts;
//! 3. [`Rounds::next`], once per round: the next attempt of every unfinished reference
//!    is grouped by (endpoint, credential), each group is authorized once for all its
//!    repositories (a session from an earlier round is reused), and every `HEAD` of
//!    the round runs concurrently under one semaphore;
//! 4. [`Rounds::finish`]: what is still unanswered (the deadline passed) is
//!    `unreachable`, naming the host it waited for.
//!
//! With no mirrors and at most one credential per registry there is one round: one
//! ping and one token request per registry (per 100 repositories: see
//! `pullcheck_registry::Client::authorize`), one `HEAD` per image, which is the protocol
//! floor. The registry client sits behind the [`Registry`] trait, so the rounds are
//! unit-tested with a scripted registry (`tests.rs`). Nothing is spawned: dropping the
//! future of [`run`] cancels every request in flight.

mod cache;
mod registry;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use futures::FutureExt;
use futures::future::Either;
use futures::future::join_all;
use futures::stream::{FuturesUnordered, Stream, StreamExt};
use pullcheck_credentials::CredentialError;
use pullcheck_mirrors::VersionWarning;
use pullcheck_reference::Reference;
use pullcheck_registry::{
    Answer, AuthorizeError, CertificateProblem, Credential, EgressRefusal, Endpoint, ErrorEntry,
    FailedHost, Missing, Platform,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

pub(crate) use cache::AnswerCache;
pub(crate) use registry::Registry;

use cache::AnswerKey;

use crate::detail;
use crate::plan::query_key;
use crate::report::{AttemptReport, MissingPart, Reason, Remedy, Status};
use crate::resolve::{
    CredentialSource, Credentials, ProviderError, Resolution, Resolver, Route, resolve_within,
};

/// Settings of one run of the query stage.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryOptions<'a> {
    /// Requests in flight, shared with every other run on the same permits (one
    /// [`crate::Checker`]'s checks). Each authorize and each check holds one permit.
    pub permits: &'a Semaphore,
    /// Past this, references without an answer are `unreachable`. Too long to add to
    /// the clock: no deadline ([`crate::deadline_at`]).
    pub deadline: Duration,
    /// When the deadline's clock started; `None`: when [`run`] starts.
    pub deadline_start: Option<std::time::Instant>,
    /// The platform indexes must list, passed to every check; `None`: none.
    pub platform: Option<&'a Platform>,
    /// Positive answers of earlier checks (`--cache-present`); `None`: every image is
    /// asked.
    pub cache: Option<&'a AnswerCache>,
}

/// The key of one (set, reference) query in the map [`run`] returns: the image set's
/// index and what a pull asks for ([`query_key`]), so `alpine` and
/// `docker.io/library/alpine:latest` of one set share a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct QueryKey {
    /// The image set's index.
    pub set: usize,
    /// [`query_key`] of the reference: `domain/path:tag` or `domain/path@digest`.
    pub reference: String,
}

impl QueryKey {
    /// The key of `reference` in image set `set`.
    pub fn new(set: usize, reference: &Reference) -> QueryKey {
        QueryKey {
            set,
            reference: query_key(reference),
        }
    }
}

/// The answer for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// The status.
    pub status: Status,
    /// Why, as data.
    pub reason: Reason,
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
    /// The answer came from the [`AnswerCache`], not from a request of this check.
    pub cached: bool,
    /// For `blocked` by the registry client's egress policy: the rule and what it
    /// matched.
    pub egress: Option<EgressRefusal>,
    /// For a missing tag, the repository's tags close to it.
    pub close_tags: Vec<String>,
    /// What the user can do about it, as data.
    pub remedies: Vec<Remedy>,
    /// Every attempt, when more than one was made.
    pub attempts: Vec<AttemptReport>,
    /// The credential provider plugins that matched and failed.
    pub provider_failures: Vec<ProviderError>,
    /// For `platform_not_found`: the platforms the index lists, `os/arch[/variant]`;
    /// for `platform_mismatch`: the one the single-platform image is built for.
    pub platforms: Vec<String>,
    /// For `rate_limited`: the wait the registry asked for, in whole seconds.
    pub retry_after: Option<u64>,
    /// The HTTP status of the registry's answer, when one came.
    pub http_status: Option<u16>,
    /// The registry's error envelope of that answer (at most 10 entries).
    pub registry_errors: Vec<ErrorEntry>,
    /// For a failure to authorize: the host that failed (the registry or its token
    /// server).
    pub failed_host: Option<FailedHost>,
    /// For `tls_untrusted`: what is wrong with the registry's https certificate, when
    /// the registry client says.
    pub certificate: Option<CertificateProblem>,
    /// Where some runtime releases would answer otherwise (an answer over HTTPS from
    /// containerd's loopback default host), of this attempt and, once chosen, of all.
    pub version_warnings: Vec<VersionWarning>,
}

/// One (route, credential) pair to try.
#[derive(Debug, Clone)]
struct Attempt {
    endpoint: Endpoint,
    repository: String,
    credential: Credential,
    source: Option<CredentialSource>,
    over_tls_warning: Option<VersionWarning>,
    over_plain_http_warning: Option<VersionWarning>,
    /// Whether the endpoint is a mirror rather than the image's own registry
    /// ([`crate::resolve::ResolvedEndpoint::is_mirror`]).
    mirror: bool,
}

/// The endpoint of one attempt, as the report names it.
#[derive(Debug, Clone, Default)]
struct Asked {
    /// Its host, `host[:port]`.
    host: String,
    /// Its name in the report ([`endpoint_name`]).
    name: String,
    /// Whether it is a mirror.
    mirror: bool,
}

impl Asked {
    fn of(attempt: &Attempt) -> Asked {
        Asked {
            host: attempt.endpoint.host.clone(),
            name: endpoint_name(&attempt.endpoint),
            mirror: attempt.mirror,
        }
    }
}

/// One attempt's answer, for [`choose`].
#[derive(Debug)]
struct Tried {
    /// The endpoint's name in the report ([`endpoint_name`]).
    endpoint: String,
    /// Whether the endpoint is a mirror.
    mirror: bool,
    /// Its answer.
    outcome: Outcome,
}

/// A reference still being asked about.
#[derive(Debug)]
struct Pending {
    key: QueryKey,
    reference: Reference,
    attempts: VecDeque<Attempt>,
    /// Every failed attempt so far.
    failures: Vec<Tried>,
    /// The endpoint of the attempt in flight, for the deadline message.
    asking: Option<Asked>,
    /// The credential provider plugins that failed for it, on any route.
    provider_failures: Vec<ProviderError>,
}

/// One reference's resolution, keyed: what phase 1 hands to phase 2; `None` when it
/// was cut off past the deadline (a credential helper that does not answer).
type Resolved<'r> = (
    QueryKey,
    &'r Reference,
    Option<Result<Resolution, CredentialError>>,
);

/// An (endpoint, credential) pair: what one session is authorized for.
type Slot = (Endpoint, Credential);

/// Queries every (set, reference) pair, with the set's credentials; every one of them
/// gets an [`Outcome`], keyed by [`QueryKey`].
pub(crate) async fn run<R: Registry>(
    registry: &R,
    resolver: &Resolver,
    credentials: &[Credentials],
    references: &[(usize, &Reference)],
    options: &QueryOptions<'_>,
) -> HashMap<QueryKey, Outcome> {
    let start = options
        .deadline_start
        .unwrap_or_else(std::time::Instant::now);
    let deadline = Instant::from_std(crate::deadline_at(start, options.deadline));
    let resolutions: FuturesUnordered<_> = references
        .iter()
        .map(|&(set, reference)| {
            resolve_one(resolver, credentials.get(set), set, reference, deadline)
        })
        .collect();
    ask_as_resolved(registry, resolutions, options, deadline).await
}

/// How long past the deadline one reference's resolution may run before it is cut off
/// (`credential_helper_failed`): the credential provider plugins are bounded by the
/// deadline themselves and need this moment to be killed and reaped, so that their row
/// names the plugin that timed out.
const RESOLVE_GRACE: Duration = Duration::from_millis(1500);

/// Phase 1, for one reference: its routes and credentials with its set's credentials (a
/// set without credentials has no routes), bounded on its own, so that a plugin or
/// helper that does not answer holds up only the references it serves.
async fn resolve_one<'r>(
    resolver: &Resolver,
    credentials: Option<&Credentials>,
    set: usize,
    reference: &'r Reference,
    deadline: Instant,
) -> Resolved<'r> {
    let key = QueryKey::new(set, reference);
    let Some(credentials) = credentials else {
        return (key, reference, Some(Ok(Resolution::Routes(Vec::new()))));
    };
    let bound = deadline.checked_add(RESOLVE_GRACE).unwrap_or(deadline);
    let resolution = tokio::time::timeout_at(
        bound,
        resolve_within(reference, resolver, credentials, Some(deadline)),
    )
    .await
    .ok();
    (key, reference, resolution)
}

/// Phases 2 to 4: adds each reference as its resolution arrives, asks in rounds (the
/// references resolved so far; later ones join the next round and reuse its sessions)
/// until every reference is answered, its attempts are spent or the deadline passes,
/// and marks the unanswered.
async fn ask_as_resolved<'r, R: Registry>(
    registry: &R,
    mut resolutions: impl Stream<Item = Resolved<'r>> + Unpin,
    options: &QueryOptions<'_>,
    deadline: Instant,
) -> HashMap<QueryKey, Outcome> {
    let mut rounds = Rounds::default();
    loop {
        while let Some(Some((key, reference, resolution))) = resolutions.next().now_or_never() {
            rounds.add(key, reference, resolution, options);
        }
        if rounds.pending.is_empty() || rounds.timed_out {
            // Nothing to ask: wait for the next resolution.
            match resolutions.next().await {
                Some((key, reference, resolution)) => {
                    rounds.add(key, reference, resolution, options);
                    continue;
                }
                None => break,
            }
        }
        // One round; resolutions that arrive meanwhile join the next one.
        let mut arrived = Vec::new();
        let asked = {
            let round = std::pin::pin!(rounds.next(registry, options, deadline));
            let collect = std::pin::pin!(async {
                while let Some(r) = resolutions.next().await {
                    arrived.push(r);
                }
                std::future::pending::<()>().await;
            });
            match futures::future::select(round, collect).await {
                Either::Left((asked, _)) => asked,
                Either::Right(((), _)) => false,
            }
        };
        for (key, reference, resolution) in arrived {
            rounds.add(key, reference, resolution, options);
        }
        if !asked && !rounds.timed_out {
            // Nothing could be asked: only a resolution still to come adds work.
            match resolutions.next().await {
                Some((key, reference, resolution)) => {
                    rounds.add(key, reference, resolution, options)
                }
                None => break,
            }
        }
    }
    rounds.finish(options.deadline)
}

/// [`ask_as_resolved`] over references resolved already.
#[cfg(test)]
async fn ask<R: Registry>(
    registry: &R,
    resolved: Vec<(QueryKey, &Reference, Result<Resolution, CredentialError>)>,
    options: &QueryOptions<'_>,
    deadline: Instant,
) -> HashMap<QueryKey, Outcome> {
    let resolved = resolved.into_iter().map(|(k, r, res)| (k, r, Some(res)));
    ask_as_resolved(registry, futures::stream::iter(resolved), options, deadline).await
}

/// The state of the rounds: what is answered, what is still asked about, and the
/// sessions authorized so far.
struct Rounds<S> {
    /// Final outcomes.
    finished: HashMap<QueryKey, Outcome>,
    /// References with attempts left or in flight, in the order they were added.
    pending: Vec<Pending>,
    /// Sessions (or the authorize failure) per (endpoint, credential), reused by later
    /// rounds.
    sessions: HashMap<Slot, Result<S, AuthorizeError>>,
    /// Whether a round ran into the deadline.
    timed_out: bool,
}

impl<S> Default for Rounds<S> {
    fn default() -> Self {
        Rounds {
            finished: HashMap::new(),
            pending: Vec::new(),
            sessions: HashMap::new(),
            timed_out: false,
        }
    }
}

impl<S: Clone + Send + Sync> Rounds<S> {
    /// Phase 2: one reference's resolution becomes its final outcome (a helper's
    /// failure, blocked, unresolvable: no request is sent) or its list of attempts.
    fn add(
        &mut self,
        key: QueryKey,
        reference: &Reference,
        resolution: Option<Result<Resolution, CredentialError>>,
        options: &QueryOptions<'_>,
    ) {
        let Some(resolution) = resolution else {
            let outcome = failure(
                Status::Unreachable,
                Reason::CredentialHelperFailed,
                detail::helpers_out_of_time(options.deadline),
            );
            self.finished.insert(key, outcome);
            return;
        };
        let outcome = match resolution {
            Err(e) => failure(
                Status::Unreachable,
                Reason::CredentialHelperFailed,
                detail::not_checked(&e),
            ),
            Ok(Resolution::Blocked { rule }) => failure(
                Status::Blocked,
                Reason::BlockedByConfig,
                detail::blocked(&rule),
            ),
            Ok(Resolution::Unresolvable { rule, reason }) => failure(
                Status::Invalid,
                Reason::UnpullableByConfig,
                detail::unpullable(&reason, &rule),
            ),
            Ok(Resolution::Routes(routes)) => {
                let mut provider_failures: Vec<ProviderError> = Vec::new();
                for f in routes.iter().flat_map(|r| &r.provider_failures) {
                    if !provider_failures.contains(f) {
                        provider_failures.push(f.clone());
                    }
                }
                let attempts = attempts_of(reference, routes);
                // Any attempt found present a moment ago: the runtime would pull from
                // one of them, so the image is there; nothing is asked.
                let hit = options.cache.and_then(|cache| {
                    let now = std::time::Instant::now();
                    attempts
                        .iter()
                        .find_map(|a| cache.get(&answer_key(a, reference, options.platform), now))
                });
                if let Some(outcome) = hit {
                    self.finished
                        .insert(key, with_provider_failures(outcome, provider_failures));
                    return;
                }
                self.pending.push(Pending {
                    key,
                    reference: reference.clone(),
                    attempts,
                    failures: Vec::new(),
                    asking: None,
                    provider_failures,
                });
                return;
            }
        };
        self.finished.insert(key, outcome);
    }

    /// Phase 3, one round: asks the next attempt of every pending reference, grouped by
    /// (endpoint, credential), and records the answers; a reference is finished when
    /// present or out of attempts. Returns whether another round may follow (something
    /// was asked and the deadline did not pass).
    async fn next<R: Registry<Session = S>>(
        &mut self,
        registry: &R,
        options: &QueryOptions<'_>,
        deadline: Instant,
    ) -> bool {
        if self.pending.is_empty() || self.timed_out {
            return false;
        }
        let groups = self.groups();
        if groups.is_empty() {
            return false;
        }
        let answers: Answers = Mutex::default();
        let round = join_all(groups.iter().map(|g| {
            let cached = self.sessions.get(&g.slot).cloned();
            ask_group(registry, g, cached, options, &answers, deadline)
        }));
        match tokio::time::timeout_at(deadline, round).await {
            Ok(authorized) => {
                for (slot, session) in authorized {
                    self.sessions.entry(slot).or_insert(session);
                }
            }
            Err(_) => self.timed_out = true,
        }
        let answers = answers.into_inner().unwrap_or_else(|p| p.into_inner());
        self.record(answers);
        !self.timed_out
    }

    /// This round's groups: the next attempt of every pending reference with one left,
    /// grouped by (endpoint, credential) in first-seen order.
    fn groups(&mut self) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for (index, p) in self.pending.iter_mut().enumerate() {
            let Some(attempt) = p.attempts.pop_front() else {
                continue;
            };
            p.asking = Some(Asked::of(&attempt));
            let slot = (attempt.endpoint, attempt.credential);
            let job = Job {
                index,
                repository: attempt.repository,
                manifest_reference: p.reference.manifest_reference().to_string(),
            };
            match groups.iter_mut().find(|g| g.slot == slot) {
                Some(g) => g.jobs.push(job),
                None => groups.push(Group {
                    slot,
                    source: attempt.source,
                    over_tls_warning: attempt.over_tls_warning,
                    over_plain_http_warning: attempt.over_plain_http_warning,
                    jobs: vec![job],
                }),
            }
        }
        groups
    }

    /// Adds a round's answers to their references' attempts and moves each reference
    /// that is present, or has no attempt left, to the finished outcomes.
    fn record(&mut self, answers: Vec<(usize, String, Outcome)>) {
        let mut done = vec![false; self.pending.len()];
        for (index, place, outcome) in answers {
            let Some(p) = self.pending.get_mut(index) else {
                continue;
            };
            // The runtime stops at the first endpoint that serves the manifest, also one
            // it will pull and not run.
            done[index] |= matches!(outcome.status, Status::Present | Status::Unrunnable)
                || p.attempts.is_empty();
            let mirror = p.asking.as_ref().is_some_and(|a| a.mirror);
            p.failures.push(Tried {
                endpoint: place,
                mirror,
                outcome,
            });
        }
        for (p, done) in std::mem::take(&mut self.pending).into_iter().zip(done) {
            if done {
                let outcome = with_provider_failures(choose(p.failures), p.provider_failures);
                self.finished.insert(p.key, outcome);
            } else {
                self.pending.push(p);
            }
        }
    }

    /// Phase 4: every reference still pending is `unreachable`, naming the host it was
    /// waiting for (or would have asked next), after its earlier attempts; returns
    /// every outcome.
    fn finish(mut self, deadline: Duration) -> HashMap<QueryKey, Outcome> {
        for p in std::mem::take(&mut self.pending) {
            let mut failures = p.failures;
            let asked = p
                .asking
                .clone()
                .or_else(|| p.attempts.front().map(Asked::of))
                .unwrap_or_default();
            failures.push(Tried {
                endpoint: asked.name,
                mirror: asked.mirror,
                outcome: Outcome {
                    registry: Some(asked.host.clone()),
                    ..failure(
                        Status::Unreachable,
                        Reason::DeadlineExceeded,
                        detail::no_answer(&asked.host, self.timed_out.then_some(deadline)),
                    )
                },
            });
            let outcome = with_provider_failures(choose(failures), p.provider_failures);
            self.finished.insert(p.key, outcome);
        }
        self.finished
    }
}

/// A reference's attempts, in order: each route (mirrors, then the primary) with each
/// of its credentials, or anonymously when it has none; anonymous is never added after
/// credentials.
fn attempts_of(reference: &Reference, routes: Vec<Route>) -> VecDeque<Attempt> {
    let mut attempts = VecDeque::new();
    for route in routes {
        if route.credentials.is_empty() {
            attempts.push_back(Attempt {
                endpoint: route.endpoint.endpoint.clone(),
                repository: route.repository.clone(),
                credential: Credential::Anonymous,
                source: None,
                over_tls_warning: route.endpoint.over_tls_warning.clone(),
                over_plain_http_warning: route.endpoint.over_plain_http_warning.clone(),
                mirror: route.endpoint.is_mirror,
            });
        }
        for c in route.credentials {
            // The same credential found twice (a pull secret and the node's config with
            // the same user and password) would get the same answer: asked once.
            let seen = attempts
                .iter()
                .any(|a| a.endpoint == route.endpoint.endpoint && a.credential == c.credential);
            if seen {
                continue;
            }
            attempts.push_back(Attempt {
                endpoint: route.endpoint.endpoint.clone(),
                repository: route.repository.clone(),
                credential: c.credential,
                source: Some(c.source),
                over_tls_warning: route.endpoint.over_tls_warning.clone(),
                over_plain_http_warning: route.endpoint.over_plain_http_warning.clone(),
                mirror: route.endpoint.is_mirror,
            });
        }
    }
    // The order in which this reference will be asked: endpoints and the sources of
    // their credentials, never a secret.
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
    attempts
}

/// `outcome` with the credential provider plugins that failed for its reference,
/// listed beside it. When it is a definite answer (present, missing, unrunnable) got
/// with a credential, that credential worked and the answer keeps its reason; else the
/// plugins are why (reason `credential_provider_failed`; the status and the attempts
/// stay what the registries answered to the other credentials).
fn with_provider_failures(mut outcome: Outcome, failures: Vec<ProviderError>) -> Outcome {
    if failures.is_empty() {
        return outcome;
    }
    let answered = outcome.status == Status::Present
        || (outcome.credential.is_some()
            && matches!(outcome.status, Status::Missing | Status::Unrunnable));
    outcome.detail = detail::provider_failures(&outcome.detail, &failures, answered);
    if !answered {
        outcome.reason = Reason::CredentialProviderFailed;
    }
    outcome.provider_failures = failures;
    outcome
}

/// An outcome without an answer from any registry.
fn failure(status: Status, reason: Reason, detail: String) -> Outcome {
    Outcome {
        status,
        reason,
        missing: None,
        digest: None,
        registry: None,
        detail,
        credential: None,
        cached: false,
        close_tags: Vec::new(),
        remedies: Vec::new(),
        attempts: Vec::new(),
        egress: None,
        provider_failures: Vec::new(),
        platforms: Vec::new(),
        retry_after: None,
        http_status: None,
        registry_errors: Vec::new(),
        failed_host: None,
        certificate: None,
        version_warnings: Vec::new(),
    }
}

/// How meaningful a failure is: a definite answer outranks a refusal, which outranks a
/// network error. [`choose`] applies it, except that a mirror's answer does not outrank
/// a primary that gave none.
fn rank(status: Status) -> u8 {
    match status {
        Status::Present | Status::Unrunnable => 5,
        Status::Missing => 4,
        Status::NoAccess => 3,
        Status::Denied => 2,
        Status::Blocked => 1,
        _ => 0,
    }
}

/// The outcome to report from every attempt's answer: the present one, else the most
/// meaningful failure ([`rank`]), with every attempt as data in [`Outcome::attempts`]
/// when more than one was made. The detail is the chosen answer's own; the front ends
/// word the other attempts from the list
/// ([`Report::word_attempts`](crate::report::Report::word_attempts)).
///
/// When the image's own registry (the primary, asked last) was among the endpoints and
/// gave no answer (a network error, a 5xx, the deadline, or the egress policy's
/// refusal), a mirror's 404, 401 or 403 does not decide the row: the primary may serve
/// what the mirror lacks, and a node that reaches it would pull the image. The
/// failures are ranked without those answers then (`unreachable`: unverified), as containers/image
/// reports the primary's error (`newImageSource`, docker/docker_image_src.go) and
/// containerd 1.x its first transport error (`dockerResolver.Resolve`). A mirror-only
/// configuration (no primary among the endpoints) keeps the plain ranking.
fn choose(mut attempts: Vec<Tried>) -> Outcome {
    let answered = |s: Status| rank(s) > rank(Status::Blocked);
    let primary_silent = attempts.iter().any(|t| !t.mirror)
        && !attempts
            .iter()
            .any(|t| !t.mirror && answered(t.outcome.status))
        && !attempts
            .iter()
            .any(|t| matches!(t.outcome.status, Status::Present | Status::Unrunnable));
    let best = attempts
        .iter()
        .enumerate()
        .filter(|(_, t)| !(primary_silent && t.mirror && answered(t.outcome.status)))
        .max_by_key(|(i, t)| (rank(t.outcome.status), std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);
    if attempts.is_empty() {
        return failure(
            Status::Unreachable,
            Reason::NoEndpoint,
            detail::NO_ENDPOINT_TO_ASK.into(),
        );
    }
    let listed: Vec<AttemptReport> = if attempts.len() > 1 {
        attempts
            .iter()
            .enumerate()
            .map(
                |(
                    i,
                    Tried {
                        endpoint,
                        outcome: o,
                        ..
                    },
                )| AttemptReport {
                    endpoint: endpoint.clone(),
                    registry: o.registry.clone().unwrap_or_default(),
                    credential: o.credential.clone(),
                    status: o.status,
                    reason: o.reason,
                    missing: o.missing,
                    close_tags: o.close_tags.clone(),
                    platforms: o.platforms.clone(),
                    retry_after: o.retry_after,
                    detail: o.detail.clone(),
                    chosen: i == best,
                },
            )
            .collect()
    } else {
        Vec::new()
    };
    let mut warnings: Vec<VersionWarning> = attempts
        .iter_mut()
        .flat_map(|t| std::mem::take(&mut t.outcome.version_warnings))
        .collect();
    warnings.sort();
    warnings.dedup();
    let mut chosen = attempts.swap_remove(best).outcome;
    chosen.attempts = listed;
    chosen.version_warnings = warnings;
    chosen
}

/// An endpoint as the report names it: `host[:port]`, with its API path when that is not
/// `/v2/` (two endpoints on one host differ by it, containerd's `override_path`).
fn endpoint_name(endpoint: &Endpoint) -> String {
    if endpoint.base_path == "/v2/" {
        endpoint.host.clone()
    } else {
        format!("{}{}", endpoint.host, endpoint.base_path)
    }
}

/// A (endpoint, credential) pair and the references to ask it about this round.
struct Group {
    slot: Slot,
    source: Option<CredentialSource>,
    /// The endpoint's warning for an answer over HTTPS.
    over_tls_warning: Option<VersionWarning>,
    /// The endpoint's warning for an answer over plain HTTP.
    over_plain_http_warning: Option<VersionWarning>,
    jobs: Vec<Job>,
}

/// One reference to ask a group's endpoint about.
struct Job {
    /// The reference's index in [`Rounds::pending`] during this round.
    index: usize,
    repository: String,
    manifest_reference: String,
}

/// A round's answers: (index in [`Rounds::pending`], where, outcome).
type Answers = Mutex<Vec<(usize, String, Outcome)>>;

/// Authorizes the group (unless a session is cached) and asks about each job; returns
/// the session for later rounds. Answers are pushed to `answers` as they come, so the
/// ones in before the deadline count when the round is cut off.
async fn ask_group<R: Registry>(
    registry: &R,
    group: &Group,
    cached: Option<Result<R::Session, AuthorizeError>>,
    options: &QueryOptions<'_>,
    answers: &Answers,
    deadline: Instant,
) -> (Slot, Result<R::Session, AuthorizeError>) {
    // The client stops retrying and backing off at the same deadline.
    let deadline = deadline.into_std();
    let (endpoint, credential) = &group.slot;
    let host = endpoint.host.clone();
    let place = endpoint_name(endpoint);
    tracing::debug!(
        endpoint = %place,
        credential = ?group.source.as_ref().map(|s| &s.source),
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
            // The first job's `HEAD` goes out alone in place of the ping; the others
            // follow when its answer says how the registry authenticates.
            let first = group
                .jobs
                .first()
                .map(|j| (j.repository.as_str(), j.manifest_reference.as_str()));
            // Its connections open while the first request is in flight.
            registry.pre_open(endpoint, group.jobs.len());
            let _permit = options.permits.acquire().await;
            registry
                .authorize(endpoint, credential, &repositories, first, deadline)
                .await
        }
    };
    match &session {
        Err(e) => {
            let mut list = answers.lock().unwrap_or_else(|p| p.into_inner());
            for job in &group.jobs {
                list.push((
                    job.index,
                    place.clone(),
                    remedied(Outcome {
                        registry: Some(host.clone()),
                        credential: group.source.clone(),
                        egress: e.refusal.clone(),
                        failed_host: Some(e.failure.failed_host()),
                        certificate: e.certificate,
                        ..failure(map_status(e.status), e.reason.into(), detail::authorize(e))
                    }),
                ));
            }
        }
        Ok(session) => {
            join_all(group.jobs.iter().map(|job| {
                let host = host.clone();
                let place = place.clone();
                async move {
                    let answer = {
                        let _permit = options.permits.acquire().await;
                        registry
                            .check(
                                session,
                                &job.repository,
                                &job.manifest_reference,
                                options.platform,
                                deadline,
                            )
                            .await
                    };
                    let mut outcome = remedied(outcome_of(answer, host, group.source.clone()));
                    let scheme_warning = if registry.over_tls(session) {
                        &group.over_tls_warning
                    } else {
                        &group.over_plain_http_warning
                    };
                    outcome.version_warnings.extend(scheme_warning.clone());
                    if let Some(cache) = options.cache {
                        let key = AnswerKey {
                            endpoint: endpoint.clone(),
                            credential: credential.clone(),
                            repository: job.repository.clone(),
                            reference: job.manifest_reference.clone(),
                            platform: options.platform.cloned(),
                        };
                        cache.put(key, &outcome, std::time::Instant::now());
                    }
                    tracing::trace!(
                        endpoint = %place,
                        repository = %job.repository,
                        reference = %job.manifest_reference,
                        status = ?outcome.status,
                        detail = %outcome.detail,
                        "answer"
                    );
                    answers
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((job.index, place, outcome));
                }
            }))
            .await;
        }
    }
    (group.slot.clone(), session)
}

/// The registry client's answer as the report's outcome, from `host`. A single-platform
/// image of another platform is `unrunnable`, not `missing`: the runtime pulls it.
fn outcome_of(answer: Answer, host: String, credential: Option<CredentialSource>) -> Outcome {
    let mismatch = answer.reason == pullcheck_registry::Reason::PlatformMismatch;
    let words = detail::answer(&answer);
    let failed_host = match &answer.finding {
        pullcheck_registry::Finding::Authorization(failure) => Some(failure.failed_host()),
        _ => None,
    };
    Outcome {
        status: if mismatch {
            Status::Unrunnable
        } else {
            map_status(answer.status)
        },
        reason: answer.reason.into(),
        missing: answer.missing.filter(|_| !mismatch).map(|m| match m {
            Missing::Tag => MissingPart::Tag,
            Missing::Digest => MissingPart::Digest,
            Missing::Repository => MissingPart::Repository,
            Missing::Platform => MissingPart::Platform,
        }),
        digest: answer.digest,
        registry: Some(host),
        detail: words,
        credential,
        cached: false,
        close_tags: answer.close_tags,
        remedies: Vec::new(),
        attempts: Vec::new(),
        egress: answer.refusal,
        provider_failures: Vec::new(),
        platforms: answer.platforms.iter().map(ToString::to_string).collect(),
        retry_after: answer.retry_after.map(|d| d.as_secs()),
        http_status: answer.http_status,
        registry_errors: answer.errors,
        failed_host,
        certificate: None,
        version_warnings: Vec::new(),
    }
}

/// What a cached answer of `attempt` for `reference` is keyed by.
fn answer_key(attempt: &Attempt, reference: &Reference, platform: Option<&Platform>) -> AnswerKey {
    AnswerKey {
        endpoint: attempt.endpoint.clone(),
        credential: attempt.credential.clone(),
        repository: attempt.repository.clone(),
        reference: reference.manifest_reference().to_string(),
        platform: platform.cloned(),
    }
}

/// The outcome with its remedies as data; the front ends word them.
/// - An https certificate not valid for the host ([`Reason::TlsUntrusted`]) is
///   `denied`, with the remedies trust its CA, or allow unverified TLS: the registry as
///   reached is not the one named, which is a failure, not a registry that could not
///   be asked. Its detail is worded from the host and the certificate problem (the
///   registry client's "unreachable" words would contradict the status).
/// - A 401 to an anonymous request ([`Reason::UnauthorizedAnonymous`]) or a registry
///   that asks for a user name and password that nothing gives
///   ([`Reason::CredentialsRequired`]): give a credential for the host.
fn remedied(mut outcome: Outcome) -> Outcome {
    let host = outcome.registry.clone().unwrap_or_default();
    match outcome.reason {
        Reason::TlsUntrusted => {
            outcome.status = Status::Denied;
            outcome.detail = match outcome.certificate {
                Some(problem) => detail::untrusted(&host, problem),
                None => detail::untrusted_as_said(&outcome.detail),
            };
            outcome.remedies = vec![
                Remedy::TrustCa { host: host.clone() },
                Remedy::AllowInsecure { host },
            ];
        }
        Reason::UnauthorizedAnonymous | Reason::CredentialsRequired => {
            outcome.remedies = vec![Remedy::GiveCredential { host }];
        }
        _ => {}
    }
    outcome
}

/// The registry client's status as the report's.
fn map_status(status: pullcheck_registry::Status) -> Status {
    use pullcheck_registry::Status as S;
    match status {
        S::Present => Status::Present,
        S::Missing => Status::Missing,
        S::NoAccess => Status::NoAccess,
        S::Denied => Status::Denied,
        S::Unreachable => Status::Unreachable,
        // Nothing was sent to the refused host, as for a blocked reference.
        S::Refused => Status::Blocked,
    }
}
