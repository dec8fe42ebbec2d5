//! pullcheck: before a build starts, ask the registries whether every image it will pull
//! exists, and report every missing image at once.
//!
//! The data flows one way, one module per stage:
//!
//! 1. **inputs** ([`pullcheck_input`], re-exported as [`input`]): pipeline files and
//!    `--image` arguments become [`input::ImageUse`]s, each with a pull policy and origin;
//! 2. **plan** (private): uses are grouped, references normalised, and each is checked,
//!    deferred, skipped or invalid;
//! 3. **resolve** ([`resolve`]): each reference gets its endpoints and credentials;
//! 4. **query** (private): the registry client ([`pullcheck_registry`]) answers each
//!    distinct reference, in rounds;
//! 5. **report** ([`report`]): every image with a status, as text or JSON.
//!
//! # API
//!
//! The boundary is [`Checker`] (built once from [`CheckerOptions`], a
//! [`resolve::Resolver`] and the node's [`credentials::NodeCredentials`]; shared by every
//! check), [`Checker::check`] and [`Checker::check_sets`] with per-check
//! [`CheckOptions`] and [`ImageSet`]s, the [`report::Report`] they return, [`explain`]
//! (no request), [`resolve`] (what `explain` and a caller building [`resolve::Credentials`]
//! need) and [`deadline_at`]. The crates of the other stages are re-exported
//! ([`input`], [`credentials`], [`mirrors`], [`reference`](mod@reference),
//! [`registry`]). The plan and the query rounds are private: they change without notice.
//!
//! One [`Checker`] serves many checks at once (a service): its HTTP client (one
//! connection pool, cached tokens) and its concurrency limit are shared by all of them;
//! each check has its own deadline and platform. Dropping a check's future cancels its
//! requests; nothing is left running.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pullcheck::Error> {
//! use pullcheck::{CheckOptions, Checker, CheckerOptions};
//! use pullcheck::{credentials::NodeCredentials, resolve::Resolver};
//! let uses = pullcheck::input::read_pipeline_file(".vela.yml".as_ref())?;
//! let checker = Checker::new(
//!     CheckerOptions::default(),
//!     Resolver::default(),
//!     NodeCredentials::empty(),
//! )?;
//! let report = checker.check(uses, &CheckOptions::default()).await;
//! println!("{}", report.to_json());
//! std::process::exit(report.exit_code());
//! # }
//! ```

mod detail;
pub mod explain;
mod plan;
mod query;
pub mod report;
pub mod resolve;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use pullcheck_credentials as credentials;
pub use pullcheck_input as input;
pub use pullcheck_mirrors as mirrors;
pub use pullcheck_reference as reference;
pub use pullcheck_registry as registry;

use credentials::{Keyring, NodeCredentials};
use input::{ImageUse, InputError};
use plan::{Action, PlanItem, PlanOptions};
use query::{Outcome, QueryKey};
use report::{ImageReport, ReferenceErrorReport, Report, Status};
use resolve::{Credentials, Resolver};

/// A usage or configuration error: the run cannot start. The CLI exits with 2.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file cannot be read or is not a pipeline at all.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A pull secret or credential file is malformed; the message names it.
    #[error("{0}")]
    Credentials(#[from] credentials::CredentialError),
    /// A mirror configuration is malformed; the message names the file and entry.
    #[error("{0}")]
    Mirrors(#[from] mirrors::MirrorError),
    /// The HTTP client cannot be built (a CA file, the TLS setup), as data:
    /// [`pullcheck_registry::ClientError::fault`] names the file.
    #[error("{0}")]
    Client(#[from] pullcheck_registry::ClientError),
}

/// Settings of a [`Checker`], shared by every check it runs. Default: 32 requests in
/// flight and [`pullcheck_registry::ClientOptions::default`].
#[derive(Debug, Clone)]
pub struct CheckerOptions {
    /// Requests (authorizations and manifest checks) in flight at once, over all
    /// registries and over all checks of the [`Checker`] running at the same time. 0
    /// counts as 1. Default 32: over a network a check of N images to one registry
    /// takes about ⌈N / concurrency⌉ round trips of `HEAD`s after its ping and token,
    /// and 32 halves those of 16 (the sweep in docs/benchmarks.md, "Default
    /// concurrency"); over HTTP/1.1 each request in flight is a connection of its own,
    /// and the checker sets [`pullcheck_registry::ClientOptions::max_connections_per_host`]
    /// to it: at most this many connections to one registry, opened together when a
    /// group of images is known ([`pullcheck_registry::Client::pre_open`]); over HTTP/2
    /// one connection carries them all. Registries limit requests per
    /// time, not requests in flight, and Docker Hub does not count `HEAD`s as pulls.
    pub concurrency: usize,
    /// The registry client: request timeout, retries, tag hints, TLS files, user agent,
    /// and the platform asked for when a check names none
    /// ([`pullcheck_registry::ClientOptions::platform`]).
    pub registry: pullcheck_registry::ClientOptions,
    /// Keep positive answers this long and answer later checks from them
    /// (`pullcheck serve --cache-present`): a tag's answer for this duration, a
    /// digest's for ten times as long (a digest names immutable content, which can
    /// still be deleted). Negative answers are never kept. Keyed by endpoint,
    /// credential, repository, reference and platform; at most 20,000 answers. `None`
    /// (the default): every check asks the registries.
    pub cache_present: Option<std::time::Duration>,
}

impl Default for CheckerOptions {
    fn default() -> Self {
        Self {
            concurrency: 32,
            registry: pullcheck_registry::ClientOptions::default(),
            cache_present: None,
        }
    }
}

/// Settings of one check. Default: `always`/`not_present` checked, `on_start` deferred,
/// 60 s overall from the start of the query stage, the [`Checker`]'s platform.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Check `on_start` images too, instead of deferring them.
    pub include_on_start: bool,
    /// Overall deadline of the query stage; unanswered images are `unreachable`.
    /// Default 60 s. Durations too long to add to the clock count as no deadline
    /// ([`deadline_at`]).
    pub deadline: Duration,
    /// When the deadline's clock started, if before the check (the CLI starts it
    /// before its Kubernetes lookups); `None`: when the query stage starts. Messages
    /// name `deadline` as given.
    pub deadline_start: Option<std::time::Instant>,
    /// The platform (`os/arch[/variant]`) that indexes and manifest lists must list;
    /// `None`: the [`Checker`]'s [`pullcheck_registry::ClientOptions::platform`]. Checks
    /// on one shared `Checker` may each ask for another platform.
    pub platform: Option<pullcheck_registry::Platform>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            include_on_start: false,
            deadline: Duration::from_secs(60),
            deadline_start: None,
            platform: None,
        }
    }
}

/// `start + deadline`, or 100 years from `start` when the sum does not fit the clock
/// (`--deadline 18446744073709551615m`): a deadline that long is no deadline, never a
/// panic.
pub fn deadline_at(start: std::time::Instant, deadline: Duration) -> std::time::Instant {
    const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);
    start.checked_add(deadline.min(FOREVER)).unwrap_or(start)
}

/// Image uses that share one set of pull secrets: one Pod (a Vela build Pod, or one
/// workload's pod template).
#[derive(Debug, Default)]
pub struct ImageSet {
    /// The uses.
    pub uses: Vec<ImageUse>,
    /// The kubelet keyring over the Pod's pull secrets (empty: none).
    pub pull_secrets: Keyring,
    /// Things found while collecting the pull secrets (a missing secret, ...), for the
    /// report's warnings.
    pub warnings: Vec<String>,
}

/// Runs checks. Build one per process and share it: it holds the HTTP client (one
/// connection pool and token cache for every registry), the concurrency limit, the
/// mirror configuration and the node's credentials. Cloning is cheap (one [`Arc`]) and
/// clones share all of it; it is `Send + Sync`, and any number of checks may run on it
/// at once.
#[derive(Debug, Clone)]
pub struct Checker {
    inner: Arc<Inner>,
}

/// What a [`Checker`] and its clones share.
#[derive(Debug)]
struct Inner {
    client: pullcheck_registry::Client,
    resolver: Resolver,
    node: NodeCredentials,
    /// [`CheckerOptions::concurrency`] permits, over every check.
    permits: tokio::sync::Semaphore,
    /// [`CheckerOptions::cache_present`].
    cache: Option<query::AnswerCache>,
}

impl Checker {
    /// Builds a checker.
    ///
    /// # Errors
    /// [`Error::Client`] when the TLS configuration cannot be built (an unreadable CA
    /// file, a certificates directory that cannot be read).
    pub fn new(
        options: CheckerOptions,
        resolver: Resolver,
        node: NodeCredentials,
    ) -> Result<Checker, Error> {
        // At most `concurrency` connections per registry: no more requests are ever
        // in flight.
        let registry = pullcheck_registry::ClientOptions {
            max_connections_per_host: options.concurrency.max(1),
            ..options.registry
        };
        let client = pullcheck_registry::Client::new(registry)?;
        Ok(Checker {
            inner: Arc::new(Inner {
                client,
                resolver,
                node,
                permits: tokio::sync::Semaphore::new(options.concurrency.max(1)),
                cache: options
                    .cache_present
                    .map(|ttl| query::AnswerCache::new(ttl, ttl.saturating_mul(10))),
            }),
        })
    }

    /// The mirror configuration and insecure registries in use.
    pub fn resolver(&self) -> &Resolver {
        &self.inner.resolver
    }

    /// Plans, resolves and queries `uses` with the node's credentials only (no pull
    /// secrets), and reports every one of them; see [`Checker::check_sets`].
    pub async fn check(&self, uses: Vec<ImageUse>, options: &CheckOptions) -> Report {
        self.check_sets(
            vec![ImageSet {
                uses,
                ..ImageSet::default()
            }],
            options,
        )
        .await
    }

    /// Plans, resolves and queries every set's uses with that set's pull secrets (then
    /// the node's credentials), and reports every use, in input order. Never fails:
    /// problems of one image are that image's status. Returns within the deadline plus
    /// the time to build the report. Dropping the future cancels its requests and
    /// credential helpers; other checks on this [`Checker`] are not affected.
    pub async fn check_sets(&self, sets: Vec<ImageSet>, options: &CheckOptions) -> Report {
        let inner = &*self.inner;
        let mut warnings = Vec::new();
        let mut credentials = Vec::with_capacity(sets.len());
        let mut uses = Vec::with_capacity(sets.len());
        for set in sets {
            let creds = Credentials::new(set.pull_secrets, inner.node.clone());
            warnings.extend(set.warnings);
            warnings.extend(creds.chain.warnings());
            credentials.push(creds);
            uses.push(set.uses);
        }
        warnings.extend(inner.resolver.mirrors.warnings());
        warnings.dedup();
        let plan = plan::plan_sets(
            uses,
            PlanOptions {
                include_on_start: options.include_on_start,
            },
        );
        let queries = plan.queries();
        let platform = options
            .platform
            .as_ref()
            .or(inner.client.options().platform.as_ref());
        let outcomes = query::run(
            &inner.client,
            &inner.resolver,
            &credentials,
            &queries,
            &query::QueryOptions {
                permits: &inner.permits,
                deadline: options.deadline,
                deadline_start: options.deadline_start,
                platform,
                cache: inner.cache.as_ref(),
            },
        )
        .await;
        let mut version_warnings: Vec<mirrors::VersionWarning> =
            inner.resolver.mirrors.version_warnings().to_vec();
        version_warnings.extend(
            outcomes
                .values()
                .flat_map(|o| o.version_warnings.iter().cloned()),
        );
        version_warnings.sort();
        version_warnings.dedup();
        let images = plan
            .items
            .into_iter()
            .map(|item| image_report(item, &outcomes))
            .collect();
        let mut report = Report::new(images, warnings);
        report.version_warnings = version_warnings;
        report
    }
}

/// One plan item's line of the report: its query's outcome, or why it was not asked.
fn image_report(item: PlanItem, outcomes: &HashMap<QueryKey, Outcome>) -> ImageReport {
    // Every reference that parses has its canonical form, skipped ones too.
    let canonical = item.parsed().map(|r| r.canonical()).or_else(|| {
        (!item.reference.is_empty())
            .then(|| reference::Reference::parse_normalized(&item.reference).ok())
            .flatten()
            .map(|r| r.canonical())
    });
    let mut image = ImageReport {
        substituted: item.substituted,
        canonical,
        origins: item.origins,
        ..ImageReport::new(
            item.reference,
            item.policy.into(),
            Status::Skipped,
            report::Reason::NeverPulled,
        )
    };
    match item.action {
        Action::Check(r) => match outcomes.get(&QueryKey::new(item.set, &r)) {
            Some(o) => {
                image.status = o.status;
                image.reason = o.reason;
                image.missing = o.missing;
                image.digest = o.digest.clone();
                image.registry = o.registry.clone();
                image.detail = o.detail.clone();
                image.credential = o.credential.clone();
                image.cached = o.cached;
                image.egress = o.egress.clone();
                image.close_tags = o.close_tags.clone();
                image.remedies = o.remedies.clone();
                image.attempts = o.attempts.clone();
                image.provider_failures = o.provider_failures.clone();
                image.platforms = o.platforms.clone();
                image.retry_after = o.retry_after;
                image.http_status = o.http_status;
                image.registry_errors = o.registry_errors.clone();
                image.failed_host = o.failed_host.clone();
            }
            None => {
                image.status = Status::Unreachable;
                image.reason = report::Reason::NoEndpoint;
                image.detail = detail::NO_ENDPOINT_RESOLVED.into();
            }
        },
        Action::Defer(_) => {
            image.status = Status::Deferred;
            image.reason = report::Reason::DeferredOnStart;
            image.detail = detail::DEFERRED_ON_START.into();
            image.remedies = vec![report::Remedy::IncludeOnStart];
        }
        Action::Skip {
            reason,
            detail,
            template,
        } => {
            image.status = Status::Skipped;
            image.reason = reason;
            image.detail = detail;
            image.template = template;
        }
        Action::Unresolved(unresolved) => {
            image.status = Status::Unresolved;
            image.reason = report::Reason::UnresolvedVariable;
            image.detail = detail::unresolved(&unresolved);
            image.problems = vec![input::Problem {
                at: unresolved.at.clone(),
                message: detail::unresolved_message(&unresolved),
            }];
            image.variables = unresolved.variables;
        }
        Action::Invalid {
            reason,
            written_policy,
            message,
            problems,
            error,
        } => {
            image.problems = problems;
            image.status = Status::Invalid;
            image.reason = reason;
            image.error = error;
            if let Some(written) = written_policy {
                image.policy = report::ReportedPolicy::Unknown(written);
                image.error = Some(ReferenceErrorReport {
                    kind: "pull_policy",
                    message: message.clone(),
                });
            }
            image.detail = message;
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_at_adds_and_never_overflows() {
        let now = std::time::Instant::now();
        assert_eq!(
            deadline_at(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        let endless = deadline_at(now, Duration::MAX);
        assert!(endless > now + Duration::from_secs(50 * 365 * 86_400));
    }

    /// A service shares one `Checker` between tasks and spawns its checks.
    #[test]
    fn checker_and_its_checks_can_be_shared_across_tasks() {
        fn shared<T: Send + Sync + Clone + 'static>(_: &T) {}
        fn spawnable<F: std::future::Future + Send>(_: F) {}
        let checker = Checker::new(
            CheckerOptions::default(),
            Resolver::default(),
            NodeCredentials::empty(),
        )
        .expect("checker");
        shared(&checker);
        let options = CheckOptions::default();
        spawnable(checker.check_sets(Vec::new(), &options));
        spawnable(checker.check(Vec::new(), &options));
    }
}
