//! `explain`: how one reference is understood — its normalised parts, and the endpoints
//! and credentials a check would use — without sending any request.

use serde::Serialize;

use crate::reference::Reference;
use crate::report::ReferenceErrorReport;
use crate::resolve::{CredentialSource, Keyring, Resolution, resolve};

/// One endpoint, in the order it would be tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointExplanation {
    /// The base URL, `https://host/v2/`.
    pub url: String,
    /// The rule that produced it.
    pub rule: String,
    /// Whether plain HTTP or unverified TLS is allowed.
    pub insecure: bool,
}

/// How one input is understood; the JSON shape of `pullcheck explain --format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The input as given.
    pub input: String,
    /// Whether it parsed.
    pub ok: bool,
    /// `domain/path[:tag][@digest]`, with `latest` only when neither was written.
    pub canonical: Option<String>,
    /// The registry domain, e.g. `docker.io`.
    pub domain: Option<String>,
    /// The repository path, e.g. `library/alpine`.
    pub path: Option<String>,
    /// The tag as written, or `latest` when neither a tag nor a digest was written.
    pub tag: Option<String>,
    /// The digest as written.
    pub digest: Option<String>,
    /// The familiar form, as the Docker CLI prints it (`FamiliarString` after
    /// `TagNameOnly`, so `alpine` is `alpine:latest`).
    pub familiar: Option<String>,
    /// The parse error.
    pub error: Option<ReferenceErrorReport>,
    /// Endpoints in the order they would be tried.
    pub endpoints: Vec<EndpointExplanation>,
    /// Credentials in the order they would be tried; empty means anonymous. Never a secret.
    pub credentials: Vec<CredentialSource>,
}

/// Explains one input.
pub fn explain(input: &str, keyring: &Keyring, insecure: &[String]) -> Explanation {
    match Reference::parse_normalized(input) {
        Ok(r) => {
            let (endpoints, credentials) = match resolve(&r, keyring, insecure) {
                Resolution::Blocked { rule } => (
                    vec![EndpointExplanation {
                        url: String::new(),
                        rule: format!("blocked: {rule}"),
                        insecure: false,
                    }],
                    Vec::new(),
                ),
                Resolution::Routes(routes) => {
                    let endpoints = routes
                        .iter()
                        .map(|route| EndpointExplanation {
                            url: route.endpoint.url(),
                            rule: route.endpoint.rule.clone(),
                            insecure: route.endpoint.insecure(),
                        })
                        .collect();
                    let mut credentials: Vec<CredentialSource> = Vec::new();
                    for source in routes
                        .into_iter()
                        .flat_map(|route| route.credentials)
                        .filter_map(|c| c.source)
                    {
                        if !credentials.contains(&source) {
                            credentials.push(source);
                        }
                    }
                    (endpoints, credentials)
                }
            };
            let tag = match (r.tag(), r.digest()) {
                (Some(t), _) => Some(t.to_string()),
                (None, None) => Some("latest".to_string()),
                (None, Some(_)) => None,
            };
            Explanation {
                input: input.to_string(),
                ok: true,
                canonical: Some(r.canonical()),
                domain: Some(r.domain().to_string()),
                path: Some(r.path().to_string()),
                tag,
                digest: r.digest().map(str::to_string),
                // As the Docker CLI prints it after `TagNameOnly`: `alpine:latest`.
                familiar: Some(if r.tag().is_none() && r.digest().is_none() {
                    format!("{}:latest", r.familiar())
                } else {
                    r.familiar()
                }),
                error: None,
                endpoints,
                credentials,
            }
        }
        Err(e) => Explanation {
            input: input.to_string(),
            ok: false,
            canonical: None,
            domain: None,
            path: None,
            tag: None,
            digest: None,
            familiar: None,
            error: Some(ReferenceErrorReport {
                kind: e.kind().as_str(),
                message: e.message().to_string(),
            }),
            endpoints: Vec::new(),
            credentials: Vec::new(),
        },
    }
}

impl Explanation {
    /// A few lines for a terminal.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.input);
        if let Some(e) = &self.error {
            let _ = writeln!(out, "  error:     {} ({})", e.message, e.kind);
            return out;
        }
        let field = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let _ = writeln!(out, "  canonical: {}", field(&self.canonical));
        let _ = writeln!(out, "  familiar:  {}", field(&self.familiar));
        let _ = writeln!(out, "  domain:    {}", field(&self.domain));
        let _ = writeln!(out, "  path:      {}", field(&self.path));
        let _ = writeln!(out, "  tag:       {}", field(&self.tag));
        let _ = writeln!(out, "  digest:    {}", field(&self.digest));
        for (i, e) in self.endpoints.iter().enumerate() {
            let _ = writeln!(
                out,
                "  endpoint {}: {} ({}{})",
                i + 1,
                e.url,
                e.rule,
                if e.insecure { ", insecure" } else { "" }
            );
        }
        if self.credentials.is_empty() {
            let _ = writeln!(out, "  credentials: none (anonymous)");
        }
        for (i, c) in self.credentials.iter().enumerate() {
            let _ = writeln!(
                out,
                "  credential {}: {} key {:?}{}",
                i + 1,
                c.source,
                c.key,
                c.username
                    .as_ref()
                    .map(|u| format!(" user {u:?}"))
                    .unwrap_or_default()
            );
        }
        out
    }
}
