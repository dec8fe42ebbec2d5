//! The seam between the query rounds and the registry client: authorize one
//! (endpoint, credential) group, check one manifest. [`pullcheck_registry::Client`] is
//! the one real implementation; the unit tests script their own.

use std::future::Future;
use std::time::Instant;

use pullcheck_registry::{Answer, AuthorizeError, Client, Credential, Endpoint, Platform};

/// What the query rounds need of a registry client. Both calls send nothing, and sleep
/// no backoff, past `deadline`; reaching it is an [`AuthorizeError`] or an [`Answer`]
/// of status unreachable, never a hang beyond it.
pub(crate) trait Registry: Sync {
    /// An authorized session with one endpoint, for one credential; clones share it.
    type Session: Clone + Send + Sync;

    /// Authenticates `credential` for `repositories` (pull scope) on `endpoint`, as
    /// [`Client::authorize_first`]: on a cold endpoint the manifest `HEAD` of `first`
    /// (`(repository, reference)`, one of the group's) goes out in place of the ping,
    /// and the session's check of it reads that answer when it was the open
    /// registry's; `None` pings as [`Client::authorize_before`].
    fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        first: Option<(&str, &str)>,
        deadline: Instant,
    ) -> impl Future<Output = Result<Self::Session, AuthorizeError>> + Send;

    /// Opens up to `wanted` connections to `endpoint` ahead of a group's requests, as
    /// [`Client::pre_open`]; returns at once. The unit tests' registries open nothing.
    fn pre_open(&self, _endpoint: &Endpoint, _wanted: usize) {}

    /// Whether `session` talks HTTPS (it did not fall back to plain HTTP).
    fn over_tls(&self, session: &Self::Session) -> bool;

    /// Whether the manifest `reference` (a tag or a digest) of `repository` exists,
    /// as [`pullcheck_registry::Session::check_with`]; with `platform`, an index must
    /// list it.
    fn check(
        &self,
        session: &Self::Session,
        repository: &str,
        reference: &str,
        platform: Option<&Platform>,
        deadline: Instant,
    ) -> impl Future<Output = Answer> + Send;
}

impl Registry for Client {
    type Session = pullcheck_registry::Session;

    async fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        first: Option<(&str, &str)>,
        deadline: Instant,
    ) -> Result<Self::Session, AuthorizeError> {
        match first {
            Some(first) => {
                self.authorize_first(endpoint, credential, repositories, first, deadline)
                    .await
            }
            None => {
                self.authorize_before(endpoint, credential, repositories, deadline)
                    .await
            }
        }
    }

    fn pre_open(&self, endpoint: &Endpoint, wanted: usize) {
        Client::pre_open(self, endpoint, wanted);
    }

    fn over_tls(&self, session: &Self::Session) -> bool {
        session.base_url().starts_with("https://")
    }

    async fn check(
        &self,
        session: &Self::Session,
        repository: &str,
        reference: &str,
        platform: Option<&Platform>,
        deadline: Instant,
    ) -> Answer {
        // `Checker` passes the check's platform, else the client's own.
        session
            .check_with(repository, reference, platform, Some(deadline))
            .await
    }
}
