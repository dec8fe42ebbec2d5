//! `explain`: how one reference is understood — its normalised parts, and the endpoints
//! and credentials a check would use, with the rule behind each — without sending any
//! request or running any credential helper.

use serde::Serialize;

use crate::reference::Reference;
use crate::report::ReferenceErrorReport;
use crate::resolve::{CredentialStep, Credentials, Resolution, Resolver};

/// One credential, in the order it would be tried. Never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialExplanation {
    /// `pull secret <name> (<file>)`, a node file's path, or a credential helper.
    pub source: String,
    /// The key it is stored under, as written.
    pub key: String,
    /// The user name, when known without running a helper.
    pub username: Option<String>,
    /// `basic`, `anonymous`, `identity_token`, `registry_token`, `helper` or
    /// `credential_provider` (a kubelet credential provider plugin that would run: its
    /// `source` is `credential provider <name> (<config file>)`, its `key` the
    /// `matchImages["<entry>"]` that matched).
    pub kind: &'static str,
}

/// One endpoint, in the order it would be tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointExplanation {
    /// The API base URL tried first, e.g. `https://registry-1.docker.io/v2/`.
    pub url: String,
    /// The rule that produced it, naming the configuration file and entry.
    pub rule: String,
    /// Whether plain HTTP or unverified TLS is allowed.
    pub insecure: bool,
    /// Whether it is a mirror.
    pub mirror: bool,
    /// The repository path asked for there.
    pub repository: String,
    /// The rule that decides which credentials this endpoint gets.
    pub credential_rule: String,
    /// The credentials for this endpoint, in order; empty means anonymous.
    pub credentials: Vec<CredentialExplanation>,
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
    /// The parse error; kind `substitution` for an input with `${VAR}`s, which Vela
    /// substitutes only when it compiles and runs the build.
    pub error: Option<ReferenceErrorReport>,
    /// The `${VAR}` variables the input reads (drone/envsubst syntax), in order; empty
    /// for a plain reference.
    pub variables: Vec<String>,
    /// The mirror configuration mode, in one line.
    pub mode: String,
    /// `blocked` or `unresolvable` with the rule, when no endpoint would be asked.
    pub refused: Option<String>,
    /// Endpoints in the order they would be tried.
    pub endpoints: Vec<EndpointExplanation>,
    /// Every distinct credential over all endpoints, in the order first tried; empty
    /// means anonymous. Never a secret.
    pub credentials: Vec<CredentialExplanation>,
}

fn credential_of(step: &CredentialStep) -> CredentialExplanation {
    let source = step.source();
    CredentialExplanation {
        source: source.source,
        key: source.key,
        username: source.username,
        kind: step.kind(),
    }
}

/// Why an input with `${VAR}`s cannot be explained as a reference, and its variables;
/// `None` for an input without `${`.
fn substitution(input: &str) -> Option<(ReferenceErrorReport, Vec<String>)> {
    if !input.contains("${") {
        return None;
    }
    let (message, variables) = match crate::input::envsubst::Template::parse(input) {
        Ok(t) if !t.has_expressions() => return None,
        Ok(t) => {
            let variables = t.variables();
            let names = variables
                .iter()
                .map(|v| format!("${{{v}}}"))
                .collect::<Vec<_>>()
                .join(", ");
            (
                format!(
                    "reads {names}: Vela substitutes it when it compiles the pipeline (from \
                     the pipeline's and the step's `environment:`) and again when the worker \
                     runs the container (from its environment and secrets), so the image is \
                     known only at build time; `pullcheck check` on the pipeline or the \
                     compiled build shows the image before and after substitution"
                ),
                variables,
            )
        }
        Err(e) => (format!("Vela's substitution refuses it: {e}"), Vec::new()),
    };
    Some((
        ReferenceErrorReport {
            kind: "substitution",
            message,
        },
        variables,
    ))
}

/// The explanation of an input that is not a reference (yet): its error, and the
/// `${VAR}`s it reads, if any; nothing resolved.
fn not_a_reference(
    input: &str,
    mode: String,
    error: ReferenceErrorReport,
    variables: Vec<String>,
) -> Explanation {
    Explanation {
        input: input.to_string(),
        ok: false,
        canonical: None,
        domain: None,
        path: None,
        tag: None,
        digest: None,
        familiar: None,
        error: Some(error),
        variables,
        mode,
        refused: None,
        endpoints: Vec::new(),
        credentials: Vec::new(),
    }
}

/// Explains one input. An input with `${VAR}`s is not parsed as a reference: its
/// [`Explanation::error`] (kind `substitution`) says that Vela fills it in at build time
/// and its [`Explanation::variables`] names what it reads.
pub fn explain(input: &str, resolver: &Resolver, credentials: &Credentials) -> Explanation {
    let mode = resolver.mirrors.mode().describe().to_string();
    if let Some((error, variables)) = substitution(input) {
        return not_a_reference(input, mode, error, variables);
    }
    let r = match Reference::parse_normalized(input) {
        Ok(r) => r,
        Err(e) => {
            let error = ReferenceErrorReport {
                kind: e.kind().as_str(),
                message: e.message().to_string(),
            };
            return not_a_reference(input, mode, error, Vec::new());
        }
    };
    // What `check` would refuse as invalid is not explained with endpoints either.
    let unusable = crate::plan::unusable(&r);
    let resolution = match unusable {
        Some(_) => Err(Resolution::Routes(Vec::new())),
        None => resolver.endpoints(&r),
    };
    let (refused, endpoints) = match resolution {
        Err(Resolution::Blocked { rule }) => (Some(format!("blocked: {rule}")), Vec::new()),
        Err(Resolution::Unresolvable { rule, reason }) => {
            (Some(format!("unresolvable: {reason} ({rule})")), Vec::new())
        }
        Err(Resolution::Routes(_)) => (None, Vec::new()),
        Ok(routes) => (
            None,
            routes
                .iter()
                .map(|route| EndpointExplanation {
                    url: route.endpoint.url.clone(),
                    rule: route.endpoint.rule.clone(),
                    insecure: route.endpoint.insecure(),
                    mirror: route.endpoint.is_mirror,
                    repository: route.repository.clone(),
                    credential_rule: route.credentials.rule.clone(),
                    credentials: credentials
                        .explain_route(route)
                        .iter()
                        .map(credential_of)
                        .collect(),
                })
                .collect::<Vec<_>>(),
        ),
    };
    let mut all: Vec<CredentialExplanation> = Vec::new();
    for c in endpoints.iter().flat_map(|e| e.credentials.iter()) {
        if !all.contains(c) {
            all.push(c.clone());
        }
    }
    let tag = match (r.tag(), r.digest()) {
        (Some(t), _) => Some(t.to_string()),
        (None, None) => Some("latest".to_string()),
        (None, Some(_)) => None,
    };
    Explanation {
        input: input.to_string(),
        ok: unusable.is_none(),
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
        error: unusable.map(|(kind, message)| ReferenceErrorReport { kind, message }),
        variables: Vec::new(),
        mode,
        refused,
        endpoints,
        credentials: all,
    }
}

impl Explanation {
    /// A few lines for a terminal.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        // As typed, but a newline or an escape sequence must not reach the terminal.
        let _ = writeln!(out, "{}", crate::report::escape_controls(&self.input));
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
        let _ = writeln!(out, "  mirrors:   {}", self.mode);
        if let Some(refused) = &self.refused {
            let _ = writeln!(out, "  refused:   {refused}");
        }
        for (i, e) in self.endpoints.iter().enumerate() {
            let _ = writeln!(
                out,
                "  endpoint {}: {}{} ({}{})",
                i + 1,
                e.url,
                e.repository,
                e.rule,
                if e.insecure { ", insecure" } else { "" }
            );
            let _ = writeln!(out, "    credentials: {}", e.credential_rule);
            if e.credentials.is_empty() {
                let _ = writeln!(out, "    - none (anonymous)");
            }
            for c in &e.credentials {
                let _ = writeln!(
                    out,
                    "    - {} key {:?} ({}{})",
                    c.source,
                    c.key,
                    c.kind,
                    c.username
                        .as_ref()
                        .map(|u| format!(", user {u:?}"))
                        .unwrap_or_default()
                );
            }
        }
        out
    }
}
