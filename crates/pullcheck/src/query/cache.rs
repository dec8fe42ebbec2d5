//! The answer cache of a long-running [`crate::Checker`] (`pullcheck serve
//! --cache-present`): positive answers only, so that a warm service asks a registry
//! nothing for an image it found a moment ago.
//!
//! - **Only `present` is kept.** A missing or refused image is asked again every time:
//!   a tag pushed a second after a failed check must not stay "missing" (the complaint
//!   about k8s-image-swapper's 24 h cache, DOMAIN.md §6, is the reverse case, and why
//!   the lifetime is short and off by default).
//! - **A tag's answer lives `tag_ttl`, a digest's `digest_ttl`.** A digest names
//!   immutable content; it can still be deleted, so it expires too, later.
//! - **The key is everything the answer depends on:** the endpoint (host, scheme
//!   rules, API path, query and headers), the credential, the repository, the manifest
//!   reference and the platform asked for. A credential that can read a repository
//!   says nothing about another credential, so answers are never shared between them.
//! - **Bounded:** at most [`MAX_ENTRIES`] entries; when full, expired entries are
//!   dropped first, then the oldest half.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pullcheck_registry::{Credential, Endpoint, Platform};

use super::Outcome;

/// The most answers kept at once (about 1 KiB each): memory stays bounded whatever
/// the load.
pub(crate) const MAX_ENTRIES: usize = 20_000;

/// What one cached answer is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AnswerKey {
    pub endpoint: Endpoint,
    pub credential: Credential,
    pub repository: String,
    /// A tag, or a digest (`algorithm:hex`).
    pub reference: String,
    pub platform: Option<Platform>,
}

impl AnswerKey {
    /// Whether the reference is a digest (a tag never holds `:`).
    fn is_digest(&self) -> bool {
        self.reference.contains(':')
    }
}

/// Positive answers with their age; see the module docs.
#[derive(Debug)]
pub(crate) struct AnswerCache {
    tag_ttl: Duration,
    digest_ttl: Duration,
    entries: Mutex<HashMap<AnswerKey, (Instant, Outcome)>>,
}

impl AnswerCache {
    /// A cache keeping tags' answers `tag_ttl` and digests' `digest_ttl`.
    pub(crate) fn new(tag_ttl: Duration, digest_ttl: Duration) -> AnswerCache {
        AnswerCache {
            tag_ttl,
            digest_ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn ttl(&self, key: &AnswerKey) -> Duration {
        if key.is_digest() {
            self.digest_ttl
        } else {
            self.tag_ttl
        }
    }

    /// The answer kept for `key`, if still fresh, with its age; its detail says it came
    /// from the cache.
    pub(crate) fn get(&self, key: &AnswerKey, now: Instant) -> Option<Outcome> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (at, outcome) = entries.get(key)?;
        let age = now.saturating_duration_since(*at);
        if age >= self.ttl(key) {
            return None;
        }
        let mut outcome = outcome.clone();
        outcome.cached = true;
        outcome.reason = crate::report::Reason::Cached;
        outcome.detail = crate::detail::cached(&outcome.detail, age);
        Some(outcome)
    }

    /// Keeps `outcome` for `key` if it is `present`; anything else is not kept.
    pub(crate) fn put(&self, key: AnswerKey, outcome: &Outcome, now: Instant) {
        if outcome.status != crate::report::Status::Present || outcome.cached {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            let (tag_ttl, digest_ttl) = (self.tag_ttl, self.digest_ttl);
            entries.retain(|k, (at, _)| {
                let ttl = if k.is_digest() { digest_ttl } else { tag_ttl };
                now.saturating_duration_since(*at) < ttl
            });
            if entries.len() >= MAX_ENTRIES {
                let mut ages: Vec<Instant> = entries.values().map(|(at, _)| *at).collect();
                ages.sort();
                let cut = ages[ages.len() / 2];
                entries.retain(|_, (at, _)| *at > cut);
            }
        }
        entries.insert(key, (now, outcome.clone()));
    }

    /// How many answers are kept now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    fn key(reference: &str) -> AnswerKey {
        AnswerKey {
            endpoint: Endpoint::new("registry.example.com"),
            credential: Credential::Anonymous,
            repository: "team/app".into(),
            reference: reference.into(),
            platform: None,
        }
    }

    fn outcome(status: Status) -> Outcome {
        Outcome {
            status,
            reason: crate::report::Reason::Found,
            missing: None,
            digest: None,
            registry: Some("registry.example.com".into()),
            detail: "found".into(),
            credential: None,
            cached: false,
            egress: None,
            close_tags: Vec::new(),
            remedies: Vec::new(),
            attempts: Vec::new(),
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

    #[test]
    fn only_present_answers_are_kept_and_marked_cached() {
        let cache = AnswerCache::new(Duration::from_secs(30), Duration::from_secs(300));
        let now = Instant::now();
        cache.put(key("v1"), &outcome(Status::Missing), now);
        cache.put(key("v2"), &outcome(Status::NoAccess), now);
        cache.put(key("v3"), &outcome(Status::Unreachable), now);
        assert_eq!(cache.len(), 0);
        cache.put(key("v4"), &outcome(Status::Present), now);
        let hit = cache
            .get(&key("v4"), now + Duration::from_secs(12))
            .expect("hit");
        assert!(hit.cached);
        assert_eq!(hit.status, Status::Present);
        assert_eq!(hit.detail, "found (answer cached 12 s ago)");
        // A cached answer is not put back (its age would restart).
        cache.put(key("v5"), &hit, now);
        assert!(cache.get(&key("v5"), now).is_none());
    }

    #[test]
    fn tags_expire_before_digests() {
        let cache = AnswerCache::new(Duration::from_secs(30), Duration::from_secs(300));
        let now = Instant::now();
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        cache.put(key("v1"), &outcome(Status::Present), now);
        cache.put(key(digest), &outcome(Status::Present), now);
        let later = now + Duration::from_secs(30);
        assert!(cache.get(&key("v1"), later).is_none(), "a tag after 30 s");
        assert!(
            cache.get(&key(digest), later).is_some(),
            "a digest after 30 s"
        );
        assert!(
            cache
                .get(&key(digest), now + Duration::from_secs(300))
                .is_none()
        );
    }

    #[test]
    fn another_credential_or_platform_is_another_answer() {
        let cache = AnswerCache::new(Duration::from_secs(30), Duration::from_secs(30));
        let now = Instant::now();
        cache.put(key("v1"), &outcome(Status::Present), now);
        let with_user = AnswerKey {
            credential: Credential::Basic {
                username: "ci".into(),
                password: "secret".into(),
            },
            ..key("v1")
        };
        assert!(cache.get(&with_user, now).is_none());
        let arm = AnswerKey {
            platform: Platform::parse("linux/arm64").ok(),
            ..key("v1")
        };
        assert!(cache.get(&arm, now).is_none());
        assert!(cache.get(&key("v1"), now).is_some());
    }

    #[test]
    fn a_full_cache_stays_bounded() {
        let cache = AnswerCache::new(Duration::from_secs(3600), Duration::from_secs(3600));
        let start = Instant::now();
        for i in 0..MAX_ENTRIES + 10 {
            let at = start + Duration::from_millis(i as u64);
            cache.put(key(&format!("v{i}")), &outcome(Status::Present), at);
        }
        assert!(cache.len() <= MAX_ENTRIES, "{}", cache.len());
        // The newest answer is kept, the oldest dropped.
        let last = start + Duration::from_millis(MAX_ENTRIES as u64 + 9);
        assert!(
            cache
                .get(&key(&format!("v{}", MAX_ENTRIES + 9)), last)
                .is_some()
        );
        assert!(cache.get(&key("v0"), last).is_none());
    }
}
