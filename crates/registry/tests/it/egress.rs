//! The egress policy on real sockets: a refused registry, redirect target, token realm
//! or resolved name gets no connection at all (each listener counts what it accepts),
//! and the answer names the rule. Every address is loopback; the only name resolved is
//! `localhost`. Each case has its control: the same request without the rule reaches
//! the listener, so a count of 0 means refused, not broken.

use crate::support;

use std::net::IpAddr;
use std::time::Duration;

use pullcheck_registry::{
    Client, ClientOptions, Credential, EgressMatch, EgressPolicy, EgressRule, Endpoint, Reason,
    RefusalRule, Status,
};
use support::guarded;
use support::server::{Request, Response, Server, respond, serve, serve_at};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const BOUND: Duration = Duration::from_secs(20);

/// A registry that has every manifest, and hands out a token at `/token`.
fn registry_script(r: &Request) -> Response {
    match (r.method.as_str(), r.path()) {
        ("GET", "/token") => respond(
            200,
            &[("Content-Type", "application/json")],
            r#"{"token":"t"}"#,
        ),
        ("GET", "/v2/") => respond(200, &[], ""),
        _ => respond(
            200,
            &[
                ("Docker-Content-Digest", DIGEST),
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            ],
            "",
        ),
    }
}

/// The listener the rules are about, on 127.0.0.2.
async fn other_address() -> Server {
    serve_at("127.0.0.2:0", registry_script).await
}

fn client(deny: &[&str], allow: &[&str]) -> Client {
    let rules = |list: &[&str]| {
        list.iter()
            .map(|p| EgressRule::parse(p).expect("rule"))
            .collect()
    };
    Client::new(ClientOptions {
        egress: EgressPolicy::new(rules(allow), rules(deny)),
        ..ClientOptions::default()
    })
    .expect("client")
}

fn endpoint(host: &str) -> Endpoint {
    Endpoint {
        allow_http: true,
        ..Endpoint::new(host)
    }
}

fn port_of(server: &Server) -> u16 {
    server
        .host
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

fn deny_rule(pattern: &str) -> RefusalRule {
    RefusalRule::Deny {
        pattern: pattern.into(),
        default: false,
    }
}

fn address(s: &str, port: Option<u16>) -> EgressMatch {
    EgressMatch::Address {
        address: s.parse().expect("address"),
        port,
        name: None,
    }
}

async fn authorize(
    client: &Client,
    host: &str,
) -> Result<pullcheck_registry::Session, pullcheck_registry::AuthorizeError> {
    let repositories = vec!["app".to_string()];
    guarded(
        BOUND,
        client.authorize(&endpoint(host), &Credential::Anonymous, &repositories),
    )
    .await
    .0
}

#[tokio::test]
async fn a_denied_registry_gets_no_connection() {
    let denied = other_address().await;
    let port = port_of(&denied);
    let refusing = client(&["127.0.0.2/32"], &[]);
    let err = authorize(&refusing, &denied.host)
        .await
        .expect_err("refused");
    assert_eq!(err.status, Status::Refused, "{err:?}");
    assert_eq!(err.reason, Reason::EgressDenied, "{err:?}");
    let refusal = err.refusal.clone().expect("refusal");
    // https is tried first: the port is the URL's.
    assert_eq!(refusal.matched, address("127.0.0.2", Some(port)));
    assert_eq!(refusal.rule, deny_rule("127.0.0.2/32"));
    // The registry itself is refused, not a token server.
    assert_eq!(
        *err.failure,
        pullcheck_registry::AuthFailure::Refused {
            host: denied.host.clone(),
            refusal,
        }
    );
    assert_eq!((denied.connections(), refusing.request_count()), (0, 0));

    // The same host as an IPv4-mapped IPv6 literal is the same address.
    let mapped = format!("[::ffff:127.0.0.2]:{port}");
    let err = authorize(&refusing, &mapped).await.expect_err("refused");
    assert_eq!(err.status, Status::Refused, "{err:?}");
    assert_eq!(err.reason, Reason::EgressDenied, "{err:?}");
    assert_eq!(denied.connections(), 0);

    // An allow list that does not name it refuses it too, and lets the named one in.
    let allowed = serve(registry_script).await;
    let only = client(&[], &[&allowed.host]);
    let err = authorize(&only, &denied.host).await.expect_err("refused");
    assert_eq!(
        (err.status, err.refusal.map(|r| r.rule)),
        (Status::Refused, Some(RefusalRule::NoAllowRule))
    );
    assert_eq!(denied.connections(), 0);
    let session = authorize(&only, &allowed.host).await.expect("allowed");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);

    // Control: without the rule, the listener answers.
    let open = client(&[], &[]);
    let session = authorize(&open, &denied.host).await.expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    assert!(denied.connections() >= 1);
}

#[tokio::test]
async fn a_redirect_to_a_denied_address_is_not_followed() {
    let denied = other_address().await;
    let target = format!("http://{}/v2/app/manifests/v1", denied.host);
    let allowed = serve(move |r| match (r.method.as_str(), r.path()) {
        ("GET", "/v2/") => respond(200, &[], ""),
        _ => respond(307, &[("Location", target.as_str())], ""),
    })
    .await;
    let refusing = client(&["127.0.0.2/32"], &[]);
    let session = authorize(&refusing, &allowed.host)
        .await
        .expect("authorize");
    let (answer, _) = guarded(BOUND, session.check("app", "v1")).await;
    assert_eq!(answer.status, Status::Refused, "{answer:?}");
    assert_eq!(answer.reason, Reason::EgressDenied, "{answer:?}");
    let refusal = answer.refusal.expect("refusal");
    assert_eq!(
        refusal.matched,
        address("127.0.0.2", Some(port_of(&denied)))
    );
    assert_eq!(refusal.rule, deny_rule("127.0.0.2/32"));
    // What was refused is the redirect target, reached from the registry (rev23r
    // finding 4: it named the registry).
    assert_eq!(
        answer.finding,
        pullcheck_registry::Finding::Refused {
            what: pullcheck_registry::RefusedRequest::Request {
                method: pullcheck_registry::Method::Head,
                host: denied.host.clone(),
                redirected_from: Some(allowed.host.clone()),
            },
        }
    );
    assert_eq!(denied.connections(), 0);
    assert_eq!(allowed.seen(), ["GET /v2/", "HEAD /v2/app/manifests/v1"]);

    // Control: without the rule, the redirect is followed to the listener.
    let open = client(&[], &[]);
    let session = authorize(&open, &allowed.host).await.expect("authorize");
    let (answer, _) = guarded(BOUND, session.check("app", "v1")).await;
    assert_eq!(answer.status, Status::Present, "{answer:?}");
    assert_eq!(denied.seen(), ["HEAD /v2/app/manifests/v1"]);
}

#[tokio::test]
async fn a_token_realm_on_a_denied_address_gets_no_token_request() {
    let denied = other_address().await;
    let challenge = format!(r#"Bearer realm="http://{}/token",service="s""#, denied.host);
    let allowed = serve(move |r| match (r.method.as_str(), r.path()) {
        ("GET", "/v2/") if r.authorization.is_none() => {
            respond(401, &[("WWW-Authenticate", challenge.as_str())], "")
        }
        _ => registry_script(r),
    })
    .await;
    let refusing = client(&["127.0.0.2/32"], &[]);
    let err = authorize(&refusing, &allowed.host)
        .await
        .expect_err("refused");
    assert_eq!(err.status, Status::Refused, "{err:?}");
    assert_eq!(err.reason, Reason::EgressDenied, "{err:?}");
    let refusal = err.refusal.expect("refusal");
    assert_eq!(
        refusal.matched,
        address("127.0.0.2", Some(port_of(&denied)))
    );
    assert_eq!(refusing.token_request_count(), 0);
    assert_eq!(denied.connections(), 0);
    assert_eq!(allowed.seen(), ["GET /v2/"]);

    // Control: without the rule, the realm is asked for the token.
    let open = client(&[], &[]);
    let session = authorize(&open, &allowed.host).await.expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    assert_eq!(
        denied
            .requests()
            .iter()
            .filter(|r| r.path() == "/token")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_name_is_refused_by_the_addresses_it_resolves_to() {
    let registry = serve(registry_script).await;
    let by_name = format!("localhost:{}", port_of(&registry));
    let refusing = client(&["127.0.0.1/32", "::1/128"], &[]);
    let err = authorize(&refusing, &by_name).await.expect_err("refused");
    assert_eq!(err.status, Status::Refused, "{err:?}");
    assert_eq!(err.reason, Reason::EgressDenied, "{err:?}");
    let refusal = err.refusal.expect("refusal");
    match &refusal.matched {
        EgressMatch::Address {
            address,
            port: None,
            name: Some(name),
        } => {
            assert_eq!(name, "localhost");
            let loopback: [IpAddr; 2] = ["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
            assert!(loopback.contains(address), "{address}");
        }
        other => panic!("matched {other:?}"),
    }
    assert!(
        matches!(&refusal.rule, RefusalRule::Deny { pattern, default: false } if pattern == "127.0.0.1/32" || pattern == "::1/128"),
        "{refusal:?}"
    );
    // https is refused at resolution, which is no failure that lets plain http start
    // (the endpoint allows it, after https fails to connect or its head start):
    // one request, and nothing reaches the registry.
    assert_eq!((registry.connections(), refusing.request_count()), (0, 1));

    // A name rule refuses it before it is resolved.
    let by_rule = client(&["localhost"], &[]);
    let err = authorize(&by_rule, &by_name).await.expect_err("refused");
    assert_eq!(
        err.refusal.map(|r| r.matched),
        Some(EgressMatch::Name {
            host: "localhost".into(),
            port: Some(port_of(&registry))
        })
    );
    assert_eq!((registry.connections(), by_rule.request_count()), (0, 0));

    // Control: the name reaches the registry without the rules.
    let open = client(&[], &[]);
    let session = authorize(&open, &by_name).await.expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    assert!(registry.connections() >= 1);
}
