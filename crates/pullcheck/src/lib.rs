//! pullcheck: before a build starts, ask the registries whether every image it will pull
//! exists, and report every missing image at once.
//!
//! The data flows one way, one module per stage:
//!
//! 1. **inputs** ([`pullcheck_input`], re-exported as [`input`]): pipeline files and
//!    `--image` arguments become [`input::ImageUse`]s, each with a pull policy and origin;
//! 2. **plan** ([`plan`]): uses are grouped, references normalised, and each is checked,
//!    deferred, skipped or invalid;
//! 3. **resolve** ([`resolve`]): each reference gets its endpoints and credentials;
//! 4. **query** ([`query`]): the registry client ([`pullcheck_registry`]) answers each
//!    distinct reference;
//! 5. **report** ([`report`]): every image with a status, as text or JSON.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pullcheck::Error> {
//! use pullcheck::{CheckOptions, Checker, credentials::NodeCredentials, resolve::Resolver};
//! let uses = pullcheck::input::read_pipeline_file(".vela.yml".as_ref())?;
//! let checker = Checker::new(CheckOptions::default(), Resolver::default(), NodeCredentials::empty())?;
//! let report = checker.check(uses).await;
//! println!("{}", report.to_text(false));
//! std::process::exit(report.exit_code());
//! # }
//! ```

pub mod explain;
pub mod plan;
pub mod query;
pub mod report;
pub mod resolve;

use std::time::Duration;

pub use pullcheck_credentials as credentials;
pub use pullcheck_input as input;
pub use pullcheck_mirrors as mirrors;
pub use pullcheck_reference as reference;
pub use pullcheck_registry as registry;

use credentials::{Keyring, NodeCredentials};
use input::{ImageUse, InputError};
use plan::{Action, PlanOptions};
use report::{ImageReport, ReferenceErrorReport, Report, Status};
use resolve::{Credentials, Resolver};

/// A usage or configuration error: the run cannot start. The CLI exits with 2.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file cannot be read or is not a pipeline at all.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A configuration file (Docker config, mirror configuration, ...) is unreadable or
    /// malformed; the message names the file.
    #[error("{0}")]
    Config(String),
    /// A pull secret or credential file is malformed; the message names it.
    #[error("{0}")]
    Credentials(#[from] credentials::CredentialError),
    /// A mirror configuration is malformed; the message names the file and entry.
    #[error("{0}")]
    Mirrors(#[from] mirrors::MirrorError),
    /// The HTTP client cannot be built (TLS setup).
    #[error("{0}")]
    Client(String),
}

/// Settings of a check. Defaults: `always`/`not_present` checked, `on_start` deferred,
/// 16 requests in flight, 10 s per request, 60 s overall, tag hints on.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Check `on_start` images too, instead of deferring them.
    pub include_on_start: bool,
    /// Requests in flight at once, over all registries. Default 16.
    pub concurrency: usize,
    /// Timeout of each HTTP request. Default 10 s.
    pub request_timeout: Duration,
    /// Overall deadline of the query stage; unanswered images are `unreachable`.
    /// Default 60 s. Durations too long to add to the clock count as no deadline.
    pub deadline: Duration,
    /// When the deadline's clock started, if before the check (the CLI starts it
    /// before its Kubernetes lookups); `None`: when the query stage starts. Messages
    /// name `deadline` as given.
    pub deadline_start: Option<std::time::Instant>,
    /// After a 404, ask `tags/list` to tell a missing repository from a missing tag and
    /// suggest close tags. Default true.
    pub tag_hints: bool,
    /// Everything else about the registry client (retries, TLS files, platform); its
    /// `request_timeout` and `tag_hints` are replaced by the fields above.
    pub registry: pullcheck_registry::ClientOptions,
}

/// `start + deadline`, or 100 years from `start` when the sum does not fit the clock
/// (`--deadline 18446744073709551615m`): a deadline that long is no deadline, never a
/// panic.
pub fn deadline_at(start: std::time::Instant, deadline: Duration) -> std::time::Instant {
    const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);
    start.checked_add(deadline.min(FOREVER)).unwrap_or(start)
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            include_on_start: false,
            concurrency: 16,
            request_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
            deadline_start: None,
            tag_hints: true,
            registry: pullcheck_registry::ClientOptions::default(),
        }
    }
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

/// Runs checks. Build one per process and reuse it: it holds the HTTP client (one
/// connection pool for every registry), the mirror configuration and the node's
/// credentials.
#[derive(Debug, Clone)]
pub struct Checker {
    client: pullcheck_registry::Client,
    resolver: Resolver,
    node: NodeCredentials,
    options: CheckOptions,
}

impl Checker {
    /// Builds a checker.
    ///
    /// # Errors
    /// [`Error::Client`] when the TLS configuration cannot be built.
    pub fn new(
        options: CheckOptions,
        resolver: Resolver,
        node: NodeCredentials,
    ) -> Result<Checker, Error> {
        let client = pullcheck_registry::Client::new(pullcheck_registry::ClientOptions {
            request_timeout: options.request_timeout,
            tag_hints: options.tag_hints,
            ..options.registry.clone()
        })
        .map_err(|e| Error::Client(e.to_string()))?;
        Ok(Checker {
            client,
            resolver,
            node,
            options,
        })
    }

    /// A checker sharing this one's HTTP client (its connection pool and tokens), resolver
    /// and node credentials, with other per-check settings: `include_on_start`,
    /// `concurrency`, `deadline` and `deadline_start` of `options` apply; its
    /// `request_timeout`, `tag_hints` and `registry` are ignored (they belong to the
    /// client). Used by `pullcheck serve` for each request's settings.
    // lead: replace by check_sets(sets, &CheckOptions)
    pub fn with_options(&self, options: CheckOptions) -> Checker {
        Checker {
            client: self.client.clone(),
            resolver: self.resolver.clone(),
            node: self.node.clone(),
            options: CheckOptions {
                request_timeout: self.options.request_timeout,
                tag_hints: self.options.tag_hints,
                registry: self.options.registry.clone(),
                ..options
            },
        }
    }

    /// The mirror configuration and insecure registries in use.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// Plans, resolves and queries `uses` with the node's credentials only (no pull
    /// secrets), and reports every one of them; see [`Checker::check_sets`].
    pub async fn check(&self, uses: Vec<ImageUse>) -> Report {
        self.check_sets(vec![ImageSet {
            uses,
            ..ImageSet::default()
        }])
        .await
    }

    /// Plans, resolves and queries every set's uses with that set's pull secrets (then
    /// the node's credentials), and reports every use. Never fails: problems of one image
    /// are that image's status. Returns within the deadline plus the time to build the
    /// report.
    pub async fn check_sets(&self, sets: Vec<ImageSet>) -> Report {
        let mut warnings = Vec::new();
        let mut credentials = Vec::with_capacity(sets.len());
        let mut uses = Vec::with_capacity(sets.len());
        for set in sets {
            let creds = Credentials::new(set.pull_secrets, self.node.clone());
            warnings.extend(set.warnings);
            warnings.extend(creds.chain.warnings());
            credentials.push(creds);
            uses.push(set.uses);
        }
        warnings.extend(self.resolver.mirrors.warnings());
        warnings.dedup();
        let plan = plan::plan_sets(
            uses,
            PlanOptions {
                include_on_start: self.options.include_on_start,
            },
        );
        let queries = plan.queries();
        let outcomes = query::run(
            &self.client,
            &self.resolver,
            &credentials,
            &queries,
            &query::QueryOptions {
                concurrency: self.options.concurrency,
                deadline: self.options.deadline,
                deadline_start: self.options.deadline_start,
            },
        )
        .await;
        let images = plan
            .items
            .into_iter()
            .map(|item| {
                let canonical = item.parsed().map(|r| r.canonical());
                let mut image = ImageReport {
                    reference: item.reference,
                    canonical,
                    policy: item.policy,
                    status: Status::Skipped,
                    missing: None,
                    digest: None,
                    registry: None,
                    detail: String::new(),
                    origins: item.origins,
                    credential: None,
                    error: None,
                };
                match item.action {
                    Action::Check(r) => match outcomes.get(&query::outcome_key(item.set, &r)) {
                        Some(o) => {
                            image.status = o.status;
                            image.missing = o.missing;
                            image.digest = o.digest.clone();
                            image.registry = o.registry.clone();
                            image.detail = o.detail.clone();
                            image.credential = o.credential.clone();
                        }
                        None => {
                            image.status = Status::Unreachable;
                            image.detail = "no endpoint resolved for this reference".into();
                        }
                    },
                    Action::Defer(_) => {
                        image.status = Status::Deferred;
                        image.detail = "pull policy `on_start`: pulled when its container \
                                        starts (check now with --include-on-start)"
                            .into();
                    }
                    Action::Skip(reason) => {
                        image.status = Status::Skipped;
                        image.detail = reason;
                    }
                    Action::Invalid { message, error } => {
                        image.status = Status::Invalid;
                        image.detail = message;
                        image.error = error.map(|e| ReferenceErrorReport {
                            kind: e.kind().as_str(),
                            message: e.message().to_string(),
                        });
                    }
                }
                image
            })
            .collect();
        Report::new(images, warnings)
    }
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
}
