//! Plan: which image uses are queried, deferred, skipped or invalid, and which
//! canonical references the registries are asked about.
//!
//! Pure: no IO. Uses of the same image, as written and with the same pull policy, are
//! one [`PlanItem`] with every origin kept; items whose references normalise to the same
//! canonical form share one query.

use std::collections::{HashMap, HashSet};

use pullcheck_input::{Disposition, ImageUse, Origin, PullPolicy, Skip};

use crate::report::Reason;
use pullcheck_reference::{Reference, RegistryHost};

/// Settings of the plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// Also check `on_start` images, which are otherwise deferred (Vela pulls them only
    /// when their step starts).
    pub include_on_start: bool,
}

/// What happens to an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Query the registry for this reference.
    Check(Reference),
    /// `on_start`: pulled when its container starts, so not checked now.
    Defer(Reference),
    /// Not checked, and why: [`Reason::NeverPulled`], [`Reason::TemplateStep`],
    /// [`Reason::InitStep`], [`Reason::Exempt`]; `detail` words it.
    Skip {
        /// Why, as data.
        reason: Reason,
        /// The words for the report.
        detail: String,
        /// For [`Reason::TemplateStep`]: the template's `name`.
        template: Option<String>,
    },
    /// The image depends on a value known only when the build runs (a secret, a
    /// server-set or unset variable): each variable and where its value comes from.
    Unresolved(pullcheck_input::Unresolved),
    /// The reference or its container is invalid.
    Invalid {
        /// [`Reason::InvalidReference`], [`Reason::UnknownPullPolicy`] or
        /// [`Reason::InvalidContainer`].
        reason: Reason,
        /// The pull policy as written, for [`Reason::UnknownPullPolicy`].
        written_policy: Option<String>,
        /// The message, naming the file, line and column where known.
        message: String,
        /// The container's problems, each with its position apart (empty for a
        /// reference that does not parse: `message` says it).
        problems: Vec<pullcheck_input::Problem>,
        /// Why the reference is unusable, as `error` in the report: the parser's kind
        /// when it did not parse, `no_registry` or `port_out_of_range` when it parses
        /// but names no registry to ask ([`unusable`]).
        error: Option<crate::report::ReferenceErrorReport>,
    },
}

/// One image as written, with its policy and every place it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    /// The image set (one Pod's pull secrets) the uses belong to; index into the sets
    /// given to [`plan_sets`].
    pub set: usize,
    /// The image as written (empty for a container with no image).
    pub reference: String,
    /// The image after Vela's `${VAR}` substitution, when it differs from `reference`.
    pub substituted: Option<String>,
    /// The normalised pull policy.
    pub policy: PullPolicy,
    /// Every use, in input order.
    pub origins: Vec<Origin>,
    /// What happens to it.
    pub action: Action,
}

impl PlanItem {
    /// The parsed reference, for checked and deferred items.
    pub fn parsed(&self) -> Option<&Reference> {
        match &self.action {
            Action::Check(r) | Action::Defer(r) => Some(r),
            _ => None,
        }
    }
}

/// The plan: items in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// One item per (image as written, policy); invalid and skipped uses stay one each.
    pub items: Vec<PlanItem>,
}

impl Plan {
    /// The distinct (set, reference) pairs to query, in first-use order: one per set and
    /// [`query_key`], so `alpine` and `docker.io/library/alpine:latest` are asked once,
    /// as are `app:v1@d` and `app@d` (the digest is what is pulled).
    pub fn queries(&self) -> Vec<(usize, &Reference)> {
        let mut seen = std::collections::HashSet::new();
        self.items
            .iter()
            .filter_map(|i| match &i.action {
                Action::Check(r) => Some((i.set, r)),
                _ => None,
            })
            .filter(|(set, r)| seen.insert((*set, query_key(r))))
            .collect()
    }
}

/// Why a reference that parses names no registry that can be asked, as (kind, reason),
/// or `None`. distribution/reference accepts both cases:
/// - an empty domain, e.g. `foo_bar.com/app` read as a bare path (`_` is not allowed
///   in a host name): kind `no_registry`;
/// - a port outside 1–65535 (`localhost:99999/app`; any digits parse): kind
///   `port_out_of_range`.
pub(crate) fn unusable(reference: &Reference) -> Option<(&'static str, String)> {
    if reference.domain().is_empty() {
        return Some((
            "no_registry",
            "it names no registry (its first component looks like a host but is not a \
             valid host name)"
                .to_string(),
        ));
    }
    let (port, in_range) = port_of(reference.domain())?;
    (!in_range).then(|| {
        (
            "port_out_of_range",
            format!(
                "port {port} of {} is not between 1 and 65535",
                reference.domain()
            ),
        )
    })
}

/// The port of a registry domain as written, if it has one, and whether it is between 1
/// and 65535: `a.io:5000` → `5000`, `[::1]:5000` → `5000`, `[::1]` → none.
fn port_of(domain: &str) -> Option<(String, bool)> {
    let host = RegistryHost::parse(domain).ok()?;
    Some((host.port()?.to_owned(), host.port_number().is_some()))
}

/// What a pull of `reference` asks the registry for: `domain/path:tag` or
/// `domain/path@digest` (the digest when there is one, else the tag, else `latest`).
pub fn query_key(reference: &Reference) -> String {
    let separator = if reference.digest().is_some() {
        '@'
    } else {
        ':'
    };
    format!(
        "{}{separator}{}",
        reference.repository(),
        reference.manifest_reference()
    )
}

/// Builds the plan from image uses that share one set of pull secrets (the tests' short
/// form of [`plan_sets`]).
#[cfg(test)]
pub fn plan(uses: Vec<ImageUse>, options: PlanOptions) -> Plan {
    plan_sets(vec![uses], options)
}

/// Builds the plan from several sets of image uses (one per Pod, each with its own pull
/// secrets); items never merge across sets.
pub fn plan_sets(sets: Vec<Vec<ImageUse>>, options: PlanOptions) -> Plan {
    let mut items: Vec<PlanItem> = Vec::new();
    // (set, image as written, as substituted, policy) -> index of the item made from a
    // checkable use.
    type Key = (usize, String, Option<String>, PullPolicy);
    let mut merged: HashMap<Key, usize> = HashMap::new();
    // The origins already listed for each merged item: the same place given twice
    // (`--image x --image x`) is listed once.
    let mut listed: HashSet<(usize, Origin)> = HashSet::new();
    for (set, u) in sets
        .into_iter()
        .enumerate()
        .flat_map(|(set, uses)| uses.into_iter().map(move |u| (set, u)))
    {
        let key = (set, u.image.clone(), u.substituted.clone(), u.policy);
        let checkable = matches!(u.disposition, Disposition::Check);
        if checkable && let Some(&index) = merged.get(&key) {
            if listed.insert((index, u.origin.clone())) {
                items[index].origins.push(u.origin);
            }
            continue;
        }
        let action = action_of(&u, options);
        if checkable {
            merged.insert(key, items.len());
            listed.insert((items.len(), u.origin.clone()));
        }
        items.push(PlanItem {
            set,
            reference: u.image,
            substituted: u.substituted,
            policy: u.policy,
            origins: vec![u.origin],
            action,
        });
    }
    Plan { items }
}

fn action_of(u: &ImageUse, options: PlanOptions) -> Action {
    match &u.disposition {
        Disposition::Skip(skip) => {
            let reason = match skip {
                Skip::Template { .. } => Reason::TemplateStep,
                Skip::Init => Reason::InitStep,
                Skip::Exempt => Reason::Exempt,
            };
            let template = match skip {
                Skip::Template { name } => Some(name.clone()),
                Skip::Init | Skip::Exempt => None,
            };
            return Action::Skip {
                reason,
                detail: crate::detail::skip(skip),
                template,
            };
        }
        Disposition::Unresolved(message) => return Action::Unresolved(message.clone()),
        Disposition::Invalid(problems) => {
            return Action::Invalid {
                reason: Reason::InvalidContainer,
                written_policy: None,
                message: pullcheck_input::Problem::join(problems),
                problems: problems.clone(),
                error: None,
            };
        }
        Disposition::UnknownPolicy { written, problems } => {
            return Action::Invalid {
                reason: Reason::UnknownPullPolicy,
                written_policy: Some(written.clone()),
                message: pullcheck_input::Problem::join(problems),
                problems: problems.clone(),
                error: None,
            };
        }
        Disposition::Check => {}
    }
    // The reference as the messages name it: as pulled, and as written when that differs.
    let shown = match &u.substituted {
        Some(s) => format!("{s:?} (substituted from {:?})", u.image),
        None => format!("{:?}", u.image),
    };
    let reference = match Reference::parse_normalized(u.pulled()) {
        Ok(r) => r,
        Err(e) => {
            return Action::Invalid {
                reason: Reason::InvalidReference,
                written_policy: None,
                message: format!("invalid reference {shown}: {e}"),
                problems: Vec::new(),
                error: Some(crate::report::ReferenceErrorReport {
                    kind: e.kind().as_str(),
                    message: e.message().to_string(),
                }),
            };
        }
    };
    if let Some((kind, why)) = unusable(&reference) {
        return Action::Invalid {
            reason: Reason::InvalidReference,
            written_policy: None,
            message: format!("invalid reference {shown}: {why}"),
            problems: Vec::new(),
            error: Some(crate::report::ReferenceErrorReport { kind, message: why }),
        };
    }
    match u.policy {
        PullPolicy::Always | PullPolicy::NotPresent => Action::Check(reference),
        PullPolicy::OnStart if options.include_on_start => Action::Check(reference),
        PullPolicy::OnStart => Action::Defer(reference),
        PullPolicy::Never => Action::Skip {
            reason: Reason::NeverPulled,
            detail: crate::detail::NEVER_PULLED.into(),
            template: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pullcheck_input::ContainerKind;

    fn step(image: &str, policy: PullPolicy, line: usize) -> ImageUse {
        ImageUse {
            image: image.into(),
            substituted: None,
            policy,
            origin: Origin {
                file: Some(".vela.yml".into()),
                line: Some(line),
                column: Some(12),
                kind: ContainerKind::Step,
                name: format!("s{line}"),
                stage: None,
                pod: None,
            },
            disposition: Disposition::Check,
        }
    }

    #[test]
    fn policies_decide_the_action() {
        let uses = vec![
            step("alpine", PullPolicy::Always, 1),
            step("golang:1.22", PullPolicy::NotPresent, 2),
            step("node:20", PullPolicy::OnStart, 3),
            step("redis", PullPolicy::Never, 4),
        ];
        let p = plan(uses.clone(), PlanOptions::default());
        assert!(matches!(p.items[0].action, Action::Check(_)));
        assert!(matches!(p.items[1].action, Action::Check(_)));
        assert!(matches!(p.items[2].action, Action::Defer(_)));
        assert!(matches!(
            &p.items[3].action,
            Action::Skip {
                reason: Reason::NeverPulled,
                ..
            }
        ));
        let p = plan(
            uses,
            PlanOptions {
                include_on_start: true,
            },
        );
        assert!(matches!(p.items[2].action, Action::Check(_)));
    }

    #[test]
    fn same_image_is_one_item_and_same_canonical_is_one_query() {
        let uses = vec![
            step("alpine", PullPolicy::Always, 1),
            step("alpine", PullPolicy::Always, 2),
            step("docker.io/library/alpine:latest", PullPolicy::NotPresent, 3),
            step("alpine", PullPolicy::Never, 4),
        ];
        let p = plan(uses, PlanOptions::default());
        assert_eq!(p.items.len(), 3);
        assert_eq!(p.items[0].origins.len(), 2);
        assert_eq!(p.items[0].origins[1].line, Some(2));
        // The same place given again (`--image x --image x`) is listed once.
        let again = vec![
            step("alpine", PullPolicy::Always, 1),
            step("alpine", PullPolicy::Always, 1),
            step("alpine", PullPolicy::Always, 2),
            step("alpine", PullPolicy::Always, 1),
        ];
        let lines: Vec<Option<usize>> = plan(again, PlanOptions::default()).items[0]
            .origins
            .iter()
            .map(|o| o.line)
            .collect();
        assert_eq!(lines, [Some(1), Some(2)]);
        let queries = p.queries();
        assert_eq!(queries.len(), 1);
        assert_eq!(queries[0].1.canonical(), "docker.io/library/alpine:latest");
    }

    #[test]
    fn substituted_images_are_checked_and_unresolved_ones_are_not() {
        let mut a = step("golang:${GO}", PullPolicy::Always, 1);
        a.substituted = Some("golang:1.22".into());
        let mut b = step("golang:${GO}", PullPolicy::Always, 2);
        b.substituted = Some("golang:1.21".into());
        let mut c = step("golang:${GO}", PullPolicy::Always, 3);
        c.substituted = Some("golang:1.22".into());
        let mut empty = step("golang:${NOPE}", PullPolicy::Always, 4);
        empty.substituted = Some("golang:".into());
        let mut secret = step("app:${TAG}", PullPolicy::Always, 5);
        let unresolved = pullcheck_input::Unresolved {
            at: None,
            image: "app:${TAG}".into(),
            variables: Vec::new(),
        };
        secret.disposition = Disposition::Unresolved(unresolved.clone());
        let p = plan(vec![a, b, c, empty, secret], PlanOptions::default());
        // Same written image, different substitutions: two items; the same: one.
        assert_eq!(p.items.len(), 4);
        assert_eq!(p.items[0].origins.len(), 2);
        assert_eq!(
            p.items[0].parsed().map(Reference::canonical).as_deref(),
            Some("docker.io/library/golang:1.22")
        );
        assert_eq!(p.items[0].reference, "golang:${GO}");
        assert_eq!(p.items[1].substituted.as_deref(), Some("golang:1.21"));
        match &p.items[2].action {
            Action::Invalid { message, .. } => assert!(
                message.starts_with(
                    "invalid reference \"golang:\" (substituted from \"golang:${NOPE}\")"
                ),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.items[3].action, Action::Unresolved(unresolved));
        assert_eq!(p.queries().len(), 2);
    }

    #[test]
    fn invalid_and_skipped_uses_stay_apart() {
        let mut bad = step("Alpine", PullPolicy::Always, 1);
        let mut template = step("", PullPolicy::NotPresent, 2);
        template.disposition = Disposition::Skip(Skip::Template { name: "t".into() });
        let mut broken = step("alpine", PullPolicy::NotPresent, 3);
        broken.disposition = Disposition::Invalid(vec![pullcheck_input::Problem {
            at: None,
            message: "bad pull".into(),
        }]);
        let p = plan(
            vec![bad.clone(), template.clone(), broken, template.clone()],
            PlanOptions::default(),
        );
        assert_eq!(p.items.len(), 4);
        match &p.items[0].action {
            Action::Invalid { error: Some(e), .. } => assert_eq!(e.kind, "uppercase"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            p.items[1].action,
            Action::Skip {
                reason: Reason::TemplateStep,
                ..
            }
        ));
        assert!(matches!(
            &p.items[2].action,
            Action::Invalid { error: None, .. }
        ));
        assert!(p.queries().is_empty());
        // The same image in two sets (two Pods' pull secrets) is two items and queries.
        let sets = plan_sets(
            vec![
                vec![step("alpine", PullPolicy::Always, 1)],
                vec![step("alpine", PullPolicy::Always, 2)],
            ],
            PlanOptions::default(),
        );
        assert_eq!(sets.items.len(), 2);
        assert_eq!(sets.queries().len(), 2);
        // distribution/reference accepts any digits as a port; no registry listens there.
        for image in ["localhost:99999/foo", "[::1]:0/foo", "a.io:70000/x"] {
            bad.image = image.into();
            let p = plan(vec![bad.clone()], PlanOptions::default());
            assert!(
                matches!(&p.items[0].action, Action::Invalid { error: Some(e), .. } if e.kind == "port_out_of_range"),
                "{image}"
            );
        }
        bad.image = "[::1]:5000/foo".into();
        assert!(matches!(
            plan(vec![bad.clone()], PlanOptions::default()).items[0].action,
            Action::Check(_)
        ));
        // distribution/reference parses this with an empty domain: nothing to ask.
        bad.image = "foo_bar.com/app".into();
        let p = plan(vec![bad.clone()], PlanOptions::default());
        assert!(
            matches!(&p.items[0].action, Action::Invalid { error: Some(e), .. } if e.kind == "no_registry")
        );
        bad.image = "alpine:3.19".into();
        assert_eq!(plan(vec![bad], PlanOptions::default()).queries().len(), 1);
    }
}
