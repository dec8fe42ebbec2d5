//! Invariants every resolution must keep, shared by the fuzz targets.

use pullcheck_mirrors::{MirrorConfig, Resolution};
use pullcheck_reference::Reference;

/// References to resolve: a fixed set, plus names built from `hints` (prefixes,
/// locations and hosts found in the input) so that matching and rewriting are reached.
pub fn references(hints: &[String]) -> Vec<Reference> {
    let mut texts: Vec<String> = [
        "alpine",
        "alpine:3.20",
        "quay.io/org/app:1",
        "localhost:5000/app",
        "[::1]:5000/app:1",
        "a.b.example.com/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for h in hints.iter().take(16) {
        let h = h.trim_start_matches("*.");
        texts.push(format!("{h}/x/app:1"));
        texts.push(format!("sub.{h}/app"));
        texts.push(format!("{h}@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
        texts.push(h.to_owned());
    }
    texts.iter().filter_map(|t| Reference::parse_normalized(t).ok()).collect()
}

pub fn resolve_all(config: &MirrorConfig, refs: &[Reference]) {
    let _ = config.describe();
    let _ = config.warnings();
    for r in refs {
        match config.resolve(r) {
            Resolution::Endpoints(e) => {
                assert!(!e.is_empty(), "no endpoints for {r}");
                assert!(e.iter().any(|e| e.blocked.is_none()), "all blocked but not Blocked: {r}");
                for ep in &e {
                    assert!(ep.url.ends_with('/'), "{}", ep.url);
                    assert!(ep.url.starts_with("https://") || ep.url.starts_with("http://"), "{}", ep.url);
                    assert!(!ep.host.is_empty());
                    assert!(!ep.rule.is_empty());
                    let _ = ep.manifest_url();
                }
            }
            Resolution::Blocked { rule } => assert!(!rule.is_empty()),
            Resolution::Unresolvable { rule, reason } => assert!(!rule.is_empty() && !reason.is_empty()),
        }
    }
}

/// Quoted strings in the input, as hints for references.
pub fn quoted(text: &str) -> Vec<String> {
    text.split('"').skip(1).step_by(2).map(str::to_owned).filter(|s| !s.is_empty()).collect()
}
