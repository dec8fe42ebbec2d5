//! The process's one logger (the CLI's `check`, `explain` and `serve` all set it here),
//! and rate-limited log lines for events that a busy or attacked service repeats.
//!
//! Log text is data: in the text format every field value and message is escaped
//! ([`escape`]), so a request's `uid`, header or path that holds a newline cannot forge a
//! second log line and a terminal escape cannot reach the reader's terminal. The JSON
//! format escapes them itself (JSON strings).

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing_subscriber::field::MakeExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How logs are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (with the request's span: its id, method and path).
    Json,
    /// Human-readable lines, every value escaped ([`escape`]).
    Text,
}

/// `value` with what could break a log line out of its line or reach a terminal
/// written as escapes: `\n`, `\r` and `\t`; `\u{..}` (hexadecimal, as Rust writes
/// them) for the other C0 and C1 control characters and DEL (`\u{1b}` for ESC) and for
/// Unicode's bidirectional marks, overrides and isolates (U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which can make a line read as another. Everything
/// else is kept as is (a backslash too: the text format is for people, not parsers).
pub fn escape(value: &str) -> std::borrow::Cow<'_, str> {
    let special = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !value.chars().any(special) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if special(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The text format's field formatter: `name=value` (the message bare), values escaped.
fn text_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + Send + Sync + 'static {
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        if field.name() == "message" {
            write!(writer, "{}", escape(&text))
        } else {
            write!(writer, "{}={}", field.name(), escape(&text))
        }
    })
    .delimited(" ")
}

/// A subscriber: `filter` (a tracing filter), in `format`, on `writer`; `ansi` colours
/// the text format's level (never the values).
pub fn subscriber<W>(
    format: LogFormat,
    filter: &str,
    ansi: bool,
    writer: W,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::new(filter);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
        LogFormat::Text => Box::new(builder.with_ansi(ansi).fmt_fields(text_fields()).finish()),
    }
}

/// Sets the process's logger: `PULLCHECK_LOG` (a tracing filter) or `default_filter`, on
/// stderr, in `format` ([`subscriber`]). Does nothing if a logger is already set.
pub fn init_logging(format: LogFormat, default_filter: &str, ansi: bool) {
    let filter = std::env::var("PULLCHECK_LOG")
        .ok()
        .filter(|f| tracing_subscriber::EnvFilter::try_new(f).is_ok())
        .unwrap_or_else(|| default_filter.to_owned());
    // `try_init` also forwards the `log` records of libraries that use `log`.
    let _ = subscriber(format, &filter, ansi, std::io::stderr).try_init();
}

/// Lets one log line through per interval and counts the others, for events an
/// overloaded or attacked service would otherwise log for every request or connection
/// (503s, the connection cap, `accept` running out of file descriptors).
#[derive(Debug)]
pub(crate) struct RateLimited {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimited {
    pub(crate) const fn new(interval: Duration) -> RateLimited {
        RateLimited {
            interval,
            last: Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when a line may be logged now, `n` being how many were left out since
    /// the last one; `None` (and one more left out) otherwise.
    pub(crate) fn allow(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < self.interval) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_line_breaks_controls_and_bidi() {
        assert_eq!(escape("plain text: ok"), "plain text: ok");
        assert_eq!(
            escape("a\nb\r\tc\x1b[31md\u{7f}\u{202e}"),
            "a\\nb\\r\\tc\\u{1b}[31md\\u{7f}\\u{202e}"
        );
    }

    #[test]
    fn rate_limited_counts_what_it_leaves_out() {
        let limit = RateLimited::new(Duration::from_secs(3600));
        assert_eq!(limit.allow(), Some(0));
        assert_eq!(limit.allow(), None);
        assert_eq!(limit.allow(), None);
        let limit = RateLimited::new(Duration::ZERO);
        assert_eq!(limit.allow(), Some(0));
        assert_eq!(limit.allow(), Some(0));
    }
}
