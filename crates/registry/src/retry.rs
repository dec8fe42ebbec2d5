//! Retries: which failures are worth another attempt, how long to wait before it
//! (exponential backoff with jitter, or the registry's `Retry-After`), and the record of
//! every failed attempt that ends up in the answer.
//!
//! Invariant: the decisions ([`next`], [`backoff`], [`parse_retry_after`], [`earliest`])
//! are pure; only [`Attempts::retry`] sleeps, and never past the deadline.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::ClientOptions;
use crate::finding::{AttemptHistory, FailedAttempt, RetryStop};

/// The earlier of two optional deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The retry settings of a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Tries in all, the first included; at least 1.
    pub max_attempts: u32,
    pub base: Duration,
    pub max: Duration,
    pub retry_after_max: Duration,
}

impl Policy {
    pub fn from_options(options: &ClientOptions) -> Policy {
        Policy {
            max_attempts: options.max_attempts.max(1),
            base: options.backoff_base,
            max: options.backoff_max.max(options.backoff_base),
            retry_after_max: options.retry_after_max,
        }
    }
}

/// Whether an HTTP status is worth another attempt: 408, 429, 502, 503, 504.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 502 | 503 | 504)
}

/// What to do after a retryable failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Sleep this long, then try again.
    Wait(Duration),
    /// Give up; the reason, when there is one beyond "no attempts left".
    Stop(Option<RetryStop>),
}

/// The backoff after `failed` failed attempts (1 for the first): `base · 2^(failed-1)`,
/// at most `max`, scaled by `0.5 + jitter/2` (`jitter` in `[0, 1)`), so between half and
/// all of it.
pub(crate) fn backoff(policy: &Policy, failed: u32, jitter: f64) -> Duration {
    let exponent = failed.saturating_sub(1).min(20);
    let full = policy.base.saturating_mul(1u32 << exponent).min(policy.max);
    full.mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0)
}

/// Decides after `failed` failed attempts (pure). `retry_after` is what the registry
/// asked for, when it did.
pub(crate) fn next(
    policy: &Policy,
    failed: u32,
    retry_after: Option<Duration>,
    now: Instant,
    deadline: Option<Instant>,
    jitter: f64,
) -> Next {
    if failed >= policy.max_attempts {
        return Next::Stop(None);
    }
    let wait = match retry_after {
        Some(asked) if asked > policy.retry_after_max => {
            return Next::Stop(Some(RetryStop::RetryAfterTooLong {
                asked,
                max: policy.retry_after_max,
            }));
        }
        Some(asked) => asked,
        None => backoff(policy, failed, jitter),
    };
    if let Some(deadline) = deadline
        && now + wait >= deadline
    {
        return Next::Stop(Some(RetryStop::WouldPassDeadline { wait }));
    }
    Next::Wait(wait)
}

/// The longest `Retry-After` kept, in seconds: 2^53 − 1, the largest integer a JSON
/// reader holds exactly (a JavaScript number, RFC 8259 §6) and within Go's `int64`, so
/// the report's `retry_after` reads in every consumer. Longer waits saturate here (any
/// of them is far beyond a retry's longest wait anyway).
pub(crate) const RETRY_AFTER_CAP_SECS: u64 = (1 << 53) - 1;

/// Reads `Retry-After` (RFC 9110 §10.2.3): delta-seconds, or an HTTP date, which becomes
/// the time from `now` until then (zero if it has passed), at most
/// [`RETRY_AFTER_CAP_SECS`]. Anything else is `None`.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let cap = Duration::from_secs(RETRY_AFTER_CAP_SECS);
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Absurdly long numbers saturate at the cap rather than fail.
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs.min(RETRY_AFTER_CAP_SECS)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO).min(cap))
}

/// The `Retry-After` of an answer, read by [`parse_retry_after`] against the clock
/// now: the one place an answer's `Retry-After` is read (pings, manifests, indexes,
/// token replies). `None` when it is absent, not text, or neither form.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// A number in `[0, 1)` that differs between calls, for jitter. From the standard
/// library's per-process random hash keys: not cryptographic, and it need not be.
pub(crate) fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos().into())
            .unwrap_or(0),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The attempts of one check (or one `authorize`): how many were made, why the failed
/// ones failed, and why retrying stopped early.
#[derive(Debug, Clone)]
pub(crate) struct Attempts {
    policy: Policy,
    deadline: Option<Instant>,
    /// The retryable failures, in order (`HTTP 503`, "connection reset by peer").
    failures: Vec<FailedAttempt>,
    /// Attempts made so far, the current one included.
    made: u32,
    /// Set when the last failure was final: the answer is that failure.
    gave_up: bool,
    stop_reason: Option<RetryStop>,
}

impl Attempts {
    pub fn new(policy: Policy, deadline: Option<Instant>) -> Attempts {
        Attempts {
            policy,
            deadline,
            failures: Vec::new(),
            made: 1,
            gave_up: false,
            stop_reason: None,
        }
    }

    /// The deadline this work must finish by, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Attempts made, the current one included.
    pub fn made(&self) -> u32 {
        self.made
    }

    /// Records a retryable failure; sleeps and returns true when another attempt is due,
    /// returns false (the failure is final) otherwise.
    pub async fn retry(
        &mut self,
        failure: impl Into<FailedAttempt>,
        retry_after: Option<Duration>,
    ) -> bool {
        self.failures.push(failure.into());
        match next(
            &self.policy,
            self.made,
            retry_after,
            Instant::now(),
            self.deadline,
            jitter(),
        ) {
            Next::Wait(wait) => {
                tracing::debug!(
                    attempt = self.made,
                    wait_ms = wait.as_millis() as u64,
                    "retrying after a retryable failure"
                );
                tokio::time::sleep(wait).await;
                self.made += 1;
                true
            }
            Next::Stop(reason) => {
                self.gave_up = true;
                self.stop_reason = reason;
                false
            }
        }
    }

    /// The history as data, for an [`crate::Answer`].
    pub fn history(&self) -> AttemptHistory {
        AttemptHistory {
            failed: self.failures.clone(),
            gave_up: self.gave_up,
            stopped: self.stop_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            max_attempts: 3,
            base: Duration::from_millis(200),
            max: Duration::from_secs(2),
            retry_after_max: Duration::from_secs(10),
        }
    }

    #[test]
    fn only_transient_statuses_are_retryable() {
        for s in [408, 429, 502, 503, 504] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 405, 500, 501, 505] {
            assert!(!retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all() {
        let p = policy();
        assert_eq!(backoff(&p, 1, 1.0), Duration::from_millis(200));
        assert_eq!(backoff(&p, 1, 0.0), Duration::from_millis(100));
        assert_eq!(backoff(&p, 2, 1.0), Duration::from_millis(400));
        assert_eq!(backoff(&p, 3, 1.0), Duration::from_millis(800));
        assert_eq!(backoff(&p, 10, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(&p, u32::MAX, 0.0), Duration::from_secs(1));
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
            let b = backoff(&p, 2, j);
            assert!(b >= Duration::from_millis(200) && b <= Duration::from_millis(400));
        }
    }

    #[test]
    fn attempts_are_bounded() {
        let p = policy();
        let now = Instant::now();
        assert!(matches!(next(&p, 1, None, now, None, 0.5), Next::Wait(_)));
        assert!(matches!(next(&p, 2, None, now, None, 0.5), Next::Wait(_)));
        assert_eq!(next(&p, 3, None, now, None, 0.5), Next::Stop(None));
        let one = Policy {
            max_attempts: 1,
            ..p
        };
        assert_eq!(next(&one, 1, None, now, None, 0.5), Next::Stop(None));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let p = policy();
        let now = Instant::now();
        assert_eq!(
            next(&p, 1, Some(Duration::from_secs(3)), now, None, 0.9),
            Next::Wait(Duration::from_secs(3))
        );
        match next(&p, 1, Some(Duration::from_secs(3600)), now, None, 0.9) {
            Next::Stop(Some(reason)) => assert_eq!(
                reason,
                RetryStop::RetryAfterTooLong {
                    asked: Duration::from_secs(3600),
                    max: Duration::from_secs(10)
                }
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_sleep_passes_the_deadline() {
        let p = policy();
        let now = Instant::now();
        let deadline = Some(now + Duration::from_millis(500));
        match next(&p, 1, Some(Duration::from_secs(1)), now, deadline, 0.0) {
            Next::Stop(Some(reason)) => {
                assert_eq!(
                    reason,
                    RetryStop::WouldPassDeadline {
                        wait: Duration::from_secs(1)
                    }
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            next(&p, 1, None, now, deadline, 0.0),
            Next::Wait(d) if d == Duration::from_millis(100)
        ));
        // A passed deadline stops even the shortest wait.
        assert!(matches!(
            next(&p, 1, None, now, Some(now), 0.0),
            Next::Stop(Some(_))
        ));
    }

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        assert_eq!(parse_retry_after(" 5 ", now), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        // RFC 9110's example date, ten seconds after `now`.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        // Obsolete RFC 850 and asctime forms are HTTP dates too.
        assert_eq!(
            parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed Oct 21 07:28:00 2015", now),
            Some(Duration::from_secs(10))
        );
        // A date in the past means now.
        assert_eq!(
            parse_retry_after("Tue, 20 Oct 2015 07:28:00 GMT", now),
            Some(Duration::ZERO)
        );
        for bad in ["", "soon", "-1", "1.5", "Wed, 99 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
        // Overflowing and huge waits saturate at 2^53 - 1 s, which a Go int64 and a
        // JavaScript number both hold (rev23r review: u64::MAX broke the Go package's
        // decoding of the whole report); the year 9999 is within it.
        let max = Duration::from_secs(9_007_199_254_740_991);
        let cap = Some(max);
        assert_eq!(parse_retry_after("99999999999999999999999", now), cap);
        assert_eq!(parse_retry_after("10000000000000000000", now), cap);
        assert_eq!(parse_retry_after("9007199254740992", now), cap);
        assert_eq!(
            parse_retry_after("9007199254740990", now),
            Some(Duration::from_secs(9_007_199_254_740_990))
        );
        let far = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now).unwrap();
        assert!(far < max, "{far:?}");
    }

    #[test]
    fn deadlines() {
        let now = Instant::now();
        let later = now + std::time::Duration::from_secs(1);
        assert_eq!(earliest(Some(now), Some(later)), Some(now));
        assert_eq!(earliest(None, Some(later)), Some(later));
        assert_eq!(earliest(Some(now), None), Some(now));
        assert_eq!(earliest(None, None), None);
    }

    #[test]
    fn retry_after_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn history_as_data() {
        let mut a = Attempts::new(policy(), None);
        assert_eq!(a.history(), AttemptHistory::default());
        a.failures.push(FailedAttempt::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(60)),
        });
        a.gave_up = true;
        a.stop_reason = Some(RetryStop::RetryAfterTooLong {
            asked: Duration::from_secs(60),
            max: Duration::from_secs(10),
        });
        assert_eq!(
            a.history(),
            AttemptHistory {
                failed: a.failures.clone(),
                gave_up: true,
                stopped: a.stop_reason,
            }
        );
    }

    fn status(status: u16) -> FailedAttempt {
        FailedAttempt::Status {
            status,
            retry_after: None,
        }
    }

    #[tokio::test]
    async fn retry_sleeps_then_gives_up() {
        let p = Policy {
            base: Duration::from_millis(1),
            max: Duration::from_millis(2),
            ..policy()
        };
        let mut a = Attempts::new(p, None);
        assert!(a.retry(status(503), None).await);
        assert!(a.retry(status(502), None).await);
        assert!(!a.retry(status(504), None).await);
        assert_eq!(a.made(), 3);
    }
}
