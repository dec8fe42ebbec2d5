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
//! use pullcheck::{CheckOptions, Checker, resolve::Keyring};
//! let uses = pullcheck::input::read_pipeline_file(".vela.yml".as_ref())?;
//! let checker = Checker::new(CheckOptions::default(), Keyring::empty())?;
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

pub use pullcheck_input as input;
pub use pullcheck_reference as reference;

use input::{ImageUse, InputError};
use plan::{Action, PlanOptions};
use report::{ImageReport, ReferenceErrorReport, Report, Status};
use resolve::Keyring;

/// A usage or configuration error: the run cannot start. The CLI exits with 2.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file cannot be read or is not a pipeline at all.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A configuration file (Docker config, ...) is unreadable or malformed; the message
    /// names the file.
    #[error("{0}")]
    Config(String),
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
    /// Default 60 s.
    pub deadline: Duration,
    /// Hosts (`host` or `host:port`) allowed plain HTTP and unverified TLS.
    pub insecure_registries: Vec<String>,
    /// After a 404, ask `tags/list` to tell a missing repository from a missing tag and
    /// suggest close tags. Default true.
    pub tag_hints: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            include_on_start: false,
            concurrency: 16,
            request_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
            insecure_registries: Vec::new(),
            tag_hints: true,
        }
    }
}

/// Runs checks. Build one per process and reuse it: it holds the HTTP client (one
/// connection pool for every registry) and the keyring.
#[derive(Debug, Clone)]
pub struct Checker {
    client: pullcheck_registry::Client,
    keyring: Keyring,
    options: CheckOptions,
}

impl Checker {
    /// Builds a checker.
    ///
    /// # Errors
    /// [`Error::Client`] when the TLS configuration cannot be built.
    pub fn new(options: CheckOptions, keyring: Keyring) -> Result<Checker, Error> {
        let client = pullcheck_registry::Client::new(pullcheck_registry::ClientOptions {
            request_timeout: options.request_timeout,
            tag_hints: options.tag_hints,
            ..pullcheck_registry::ClientOptions::default()
        })
        .map_err(|e| Error::Client(e.to_string()))?;
        Ok(Checker {
            client,
            keyring,
            options,
        })
    }

    /// Plans, resolves and queries `uses`, and reports every one of them. Never fails:
    /// problems of one image are that image's status. Returns within the deadline plus
    /// the time to build the report.
    pub async fn check(&self, uses: Vec<ImageUse>) -> Report {
        let plan = plan::plan(
            uses,
            PlanOptions {
                include_on_start: self.options.include_on_start,
            },
        );
        let queries = plan.queries();
        let outcomes = query::run(
            &self.client,
            &self.keyring,
            &queries,
            &query::QueryOptions {
                concurrency: self.options.concurrency,
                deadline: self.options.deadline,
                insecure_registries: self.options.insecure_registries.clone(),
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
                    Action::Check(r) => match outcomes.get(&plan::query_key(&r)) {
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
        Report::new(images, self.keyring.unsupported_helpers())
    }
}
