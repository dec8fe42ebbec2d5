//! `pullcheck-testkit serve`: a real registry on loopback for demos and
//! benchmarks. Run with `--help` for usage.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pullcheck_testkit::{
    Auth, ImageKind, ImageSpec, PushedImage, Registry, Repos, TokenFault, TokenPolicy,
    TokenRequest, TokenServer, User,
};

const HELP: &str = "\
pullcheck-testkit: run a real container registry on 127.0.0.1 for demos and benchmarks

USAGE:
    pullcheck-testkit serve [OPTIONS]

Starts /usr/bin/docker-registry on a free loopback port (plus, in token mode, a
token server), pushes test images, writes the connection details to the env
file and stdout, and runs until SIGINT or SIGTERM, which stop everything and
remove the temporary directory.

OPTIONS:
    --mode MODE               anonymous (default), htpasswd or token
    --user NAME:PASSWORD[:REPOS]
                              a user for htpasswd/token mode (repeatable). REPOS
                              is `*` (default) or a comma-separated list of the
                              repositories the token server lets them pull.
                              Default user: pullcheck:pullcheck-password:*
    --anonymous-pull REPOS    token mode: what requests without credentials may
                              pull (`*` or a comma-separated list; default none)
    --token-expires SECONDS   token lifetime (default 300; distribution accepts
                              tokens up to 60 s past their expiry)
    --oauth-post              token mode: also serve the OAuth2 form
                              (POST /token, grant_type=password); without it
                              POST answers 404
    --token-fault REPO=FAULT  token mode: answer the token requests for REPO with
                              FAULT instead of a token (repeatable): an HTTP
                              status (403, 500) or no-token (200 without
                              `token` or `access_token`)
    --push REPO:TAG[,KIND]    push a test image (repeatable). KIND is oci
                              (default), oci-index, docker or docker-list
    --push-many N[:PREFIX]    push N images PREFIX-0:v1 ... PREFIX-(N-1):v1,
                              cycling through the four kinds (PREFIX default
                              bench/img)
    --mirror                  also start a pull-through cache of the registry
                              (anonymous mode only); sets PULLCHECK_MIRROR
    --env-file PATH           write the variables below to PATH (atomically,
                              once everything is ready)
    --images-file PATH        write one line per pushed image:
                              REFERENCE DIGEST KIND
    --access-log PATH         append every request the registry serves once it
                              is ready (after the pushes): METHOD PATH STATUS
    --token-log PATH          token mode: append every token request as a JSON
                              line (path, service, scopes, user, status, granted)
    --tls CERT,KEY,CA         serve the registry over TLS (HTTP/2 by ALPN) with
                              these PEM files; in token mode the token server gets
                              a TLS front (HTTP/1.1) with the same certificate
    --latency-ms MS           put a proxy adding MS milliseconds each way (a round
                              trip of 2*MS) in front of the registry and the token
                              server; PULLCHECK_REGISTRY and the realm are then the
                              proxies' (0 still proxies)
    --proxy-stats PATH        with --latency-ms: keep PATH holding the proxies'
                              counts, rewritten when they change, one line each:
                              registry|token CONNECTIONS TLS PLAIN FAILED SILENT OPEN
    -h, --help                print this help

VARIABLES:
    PULLCHECK_REGISTRY            127.0.0.1:PORT
    PULLCHECK_REGISTRY_URL        http://127.0.0.1:PORT
    PULLCHECK_REGISTRY_USER       first user (htpasswd/token mode)
    PULLCHECK_REGISTRY_PASSWORD   their password (htpasswd/token mode)
    PULLCHECK_TOKEN_REALM         the token realm (token mode)
    PULLCHECK_MIRROR              127.0.0.1:PORT of the mirror (--mirror)
    PULLCHECK_REGISTRY_DIRECT     127.0.0.1:PORT of the registry process itself

EXAMPLE:
    pullcheck-testkit serve --mode token --push team/app:v1,oci-index \\
        --push-many 1000 --env-file /tmp/registry.env &
    until [ -f /tmp/registry.env ]; do sleep 0.1; done; . /tmp/registry.env
";

#[derive(Default)]
struct Options {
    mode: Mode,
    users: Vec<User>,
    anonymous_pull: Option<Repos>,
    token_expires: Option<u64>,
    oauth_post: bool,
    token_faults: Vec<(String, TokenFault)>,
    push: Vec<ImageSpec>,
    mirror: bool,
    env_file: Option<PathBuf>,
    images_file: Option<PathBuf>,
    access_log: Option<PathBuf>,
    token_log: Option<PathBuf>,
    tls: Option<pullcheck_testkit::TlsFiles>,
    latency_ms: Option<u64>,
    proxy_stats: Option<PathBuf>,
}

#[derive(Default, PartialEq)]
enum Mode {
    #[default]
    Anonymous,
    Htpasswd,
    Token,
}

fn parse_repos(s: &str) -> Repos {
    if s == "*" {
        Repos::All
    } else {
        Repos::only(s.split(',').filter(|r| !r.is_empty()))
    }
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut opts = Options::default();
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("serve") => {}
        Some("-h" | "--help") | None => return Ok(None),
        Some(other) => return Err(format!("unknown command {other:?}; try --help")),
    }
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if matches!(flag, "-h" | "--help") {
            return Ok(None);
        }
        if flag == "--mirror" {
            opts.mirror = true;
            continue;
        }
        if flag == "--oauth-post" {
            opts.oauth_post = true;
            continue;
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag {
            "--mode" => {
                opts.mode = match value()?.as_str() {
                    "anonymous" => Mode::Anonymous,
                    "htpasswd" => Mode::Htpasswd,
                    "token" => Mode::Token,
                    other => return Err(format!("unknown mode {other:?}")),
                }
            }
            "--user" => {
                let v = value()?;
                let mut parts = v.splitn(3, ':');
                let (Some(name), Some(password)) = (parts.next(), parts.next()) else {
                    return Err(format!("--user {v:?}: expected NAME:PASSWORD[:REPOS]"));
                };
                let repos = parts.next().map(parse_repos).unwrap_or(Repos::All);
                opts.users.push(User::new(name, password).pulling(repos));
            }
            "--anonymous-pull" => opts.anonymous_pull = Some(parse_repos(&value()?)),
            "--token-expires" => {
                let v = value()?;
                opts.token_expires = Some(
                    v.parse()
                        .map_err(|_| format!("--token-expires {v:?}: not a number"))?,
                );
            }
            "--token-fault" => {
                let v = value()?;
                let fault = v
                    .split_once('=')
                    .and_then(|(repo, fault)| Some((repo, TokenFault::parse(fault)?)))
                    .filter(|(repo, _)| !repo.is_empty());
                let Some((repo, fault)) = fault else {
                    return Err(format!(
                        "--token-fault {v:?}: expected REPO=STATUS or REPO=no-token"
                    ));
                };
                opts.token_faults.push((repo.to_string(), fault));
            }
            "--push" => opts
                .push
                .push(value()?.parse().map_err(|e| format!("--push: {e}"))?),
            "--push-many" => {
                let v = value()?;
                let (n, prefix) = v.split_once(':').unwrap_or((&v, "bench/img"));
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("--push-many {v:?}: expected N[:PREFIX]"))?;
                opts.push.extend(
                    (0..n).map(|i| {
                        ImageSpec::new(format!("{prefix}-{i}"), "v1", ImageKind::ALL[i % 4])
                    }),
                );
            }
            "--env-file" => opts.env_file = Some(value()?.into()),
            "--images-file" => opts.images_file = Some(value()?.into()),
            "--access-log" => opts.access_log = Some(value()?.into()),
            "--token-log" => opts.token_log = Some(value()?.into()),
            "--tls" => {
                let v = value()?;
                let parts: Vec<&str> = v.split(',').collect();
                let [cert, key, ca] = parts[..] else {
                    return Err(format!("--tls {v:?}: expected CERT,KEY,CA"));
                };
                opts.tls = Some(pullcheck_testkit::TlsFiles {
                    cert: cert.into(),
                    key: key.into(),
                    ca: ca.into(),
                });
            }
            "--latency-ms" => {
                let v = value()?;
                opts.latency_ms = Some(
                    v.parse()
                        .map_err(|_| format!("--latency-ms {v:?}: not a number"))?,
                );
            }
            "--proxy-stats" => opts.proxy_stats = Some(value()?.into()),
            other => return Err(format!("unknown option {other:?}; try --help")),
        }
    }
    if opts.proxy_stats.is_some() && opts.latency_ms.is_none() {
        return Err("--proxy-stats needs --latency-ms".into());
    }
    if opts.mirror && opts.mode != Mode::Anonymous {
        return Err("--mirror needs --mode anonymous".into());
    }
    if (opts.token_log.is_some() || opts.oauth_post || !opts.token_faults.is_empty())
        && opts.mode != Mode::Token
    {
        return Err("--token-log, --oauth-post and --token-fault need --mode token".into());
    }
    Ok(Some(opts))
}

fn write_file(path: &PathBuf, content: &str) -> Result<(), String> {
    // Write then rename, so a script polling for the file never reads half.
    let tmp = path.with_extension("tmp-pullcheck-testkit");
    std::fs::write(&tmp, content)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn token_line(r: &TokenRequest) -> String {
    let user = match &r.auth {
        pullcheck_testkit::TokenAuth::Anonymous => serde_json::Value::Null,
        pullcheck_testkit::TokenAuth::User(u) => u.as_str().into(),
        pullcheck_testkit::TokenAuth::Rejected { username } => {
            format!("rejected:{username}").into()
        }
        pullcheck_testkit::TokenAuth::RejectedRefreshToken => "rejected-refresh-token".into(),
        pullcheck_testkit::TokenAuth::Malformed => "malformed".into(),
    };
    serde_json::json!({
        "method": r.method,
        "path": r.path,
        "service": r.service,
        "scopes": r.scopes,
        "grant_type": r.grant_type,
        "user": user,
        "status": r.status,
        "granted": r.granted,
    })
    .to_string()
}

/// Appends new token requests to `path` until the task is dropped.
async fn follow_token_log(server: &TokenServer, path: PathBuf) -> Result<(), String> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut written = 0;
    loop {
        let new = server.requests_since(written);
        for r in &new {
            writeln!(file, "{}", token_line(r)).map_err(|e| e.to_string())?;
        }
        written += new.len();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keeps `path` holding the proxies' counts (rewritten atomically when they change,
/// checked every 10 ms) until the task is dropped.
async fn follow_proxy_stats(registry: &Registry, path: PathBuf) -> Result<(), String> {
    let line = |name: &str, s: pullcheck_testkit::ProxyStats| {
        format!(
            "{name} {} {} {} {} {} {}\n",
            s.connections, s.tls, s.plain, s.failed, s.silent, s.open
        )
    };
    let mut last = String::new();
    loop {
        let mut now = String::new();
        if let Some(s) = registry.proxy_stats() {
            now.push_str(&line("registry", s));
        }
        if let Some(s) = registry.token_proxy_stats() {
            now.push_str(&line("token", s));
        }
        if now != last {
            write_file(&path, &now)?;
            last = now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// SIGTERM, SIGINT and SIGHUP, installed before anything starts.
struct Signals([tokio::signal::unix::Signal; 3]);

impl Signals {
    fn install() -> Result<Self, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind| signal(kind).map_err(|e| format!("installing signal handlers: {e}"));
        Ok(Signals([
            install(SignalKind::terminate())?,
            install(SignalKind::interrupt())?,
            install(SignalKind::hangup())?,
        ]))
    }

    async fn wait(&mut self) {
        let [term, int, hup] = &mut self.0;
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    }
}

/// Runs [`serve`] until a signal arrives; dropping its future drops the
/// registries, which kills them and removes their directories.
async fn run(opts: Options) -> Result<(), String> {
    let mut signals = Signals::install()?;
    tokio::select! {
        r = serve(opts) => r,
        () = signals.wait() => {
            eprintln!("stopping");
            Ok(())
        }
    }
}

async fn serve(opts: Options) -> Result<(), String> {
    let users = if opts.users.is_empty() {
        vec![User::new("pullcheck", "pullcheck-password")]
    } else {
        opts.users.clone()
    };
    let auth = match opts.mode {
        Mode::Anonymous => Auth::Anonymous,
        Mode::Htpasswd => Auth::Htpasswd(users.clone()),
        Mode::Token => {
            let mut policy = TokenPolicy::new(users.clone());
            if let Some(repos) = opts.anonymous_pull.clone() {
                policy = policy.anonymous(repos);
            }
            policy = policy.oauth_post(opts.oauth_post);
            for (repo, fault) in &opts.token_faults {
                policy = policy.fault(repo.clone(), fault.clone());
            }
            if let Some(secs) = opts.token_expires {
                policy = policy.expires_in(Duration::from_secs(secs));
            }
            Auth::Token(policy)
        }
    };
    let mut builder = Registry::builder().auth(auth);
    if let Some(files) = opts.tls.clone() {
        builder = builder.tls(files);
    }
    if let Some(ms) = opts.latency_ms {
        builder = builder.latency(Duration::from_millis(ms));
    }
    let registry = builder.start().await.map_err(|e| e.to_string())?;
    let mirror = if opts.mirror {
        Some(
            Registry::builder()
                .mirror_of(&registry)
                .start()
                .await
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };

    let started = Instant::now();
    let pushed: Vec<PushedImage> = registry
        .push_all(&opts.push)
        .await
        .map_err(|e| e.to_string())?;
    if !pushed.is_empty() {
        eprintln!(
            "pushed {} image(s) in {:.1}s",
            pushed.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(path) = &opts.images_file {
        let lines: String = pushed
            .iter()
            .map(|p| format!("{} {} {}\n", p.reference(), p.digest, p.kind))
            .collect();
        write_file(path, &lines)?;
    }
    for p in pushed.iter().take(20) {
        eprintln!("  {} {} {}", p.reference(), p.digest, p.kind);
    }
    if pushed.len() > 20 {
        eprintln!("  ... and {} more", pushed.len() - 20);
    }
    // Count from here (the harness's own pushes are never counted).
    registry.clear_requests().await.map_err(|e| e.to_string())?;
    if let Some(path) = &opts.access_log {
        registry
            .log_requests_to(path)
            .await
            .map_err(|e| e.to_string())?;
    }

    let mut env = format!(
        "PULLCHECK_REGISTRY={}\nPULLCHECK_REGISTRY_URL={}\n",
        registry.host(),
        registry.url()
    );
    if opts.mode != Mode::Anonymous {
        env.push_str(&format!(
            "PULLCHECK_REGISTRY_USER={}\nPULLCHECK_REGISTRY_PASSWORD={}\n",
            users[0].username, users[0].password
        ));
    }
    if let Some(realm) = registry.token_realm() {
        env.push_str(&format!("PULLCHECK_TOKEN_REALM={realm}\n"));
    }
    if let Some(mirror) = &mirror {
        env.push_str(&format!("PULLCHECK_MIRROR={}\n", mirror.host()));
    }
    env.push_str(&format!(
        "PULLCHECK_REGISTRY_DIRECT={}\n",
        registry.direct_host()
    ));
    if let Some(path) = &opts.env_file {
        write_file(path, &env)?;
    }
    print!("{env}");
    let _ = std::io::stdout().flush();
    eprintln!("ready; stop with Ctrl-C or SIGTERM");

    let token_log = async {
        match (registry.token_server(), opts.token_log) {
            (Some(server), Some(path)) => follow_token_log(server, path).await,
            _ => std::future::pending().await,
        }
    };
    let proxy_stats = async {
        match opts.proxy_stats {
            Some(path) => follow_proxy_stats(&registry, path).await,
            None => std::future::pending().await,
        }
    };
    tokio::try_join!(token_log, proxy_stats)?;
    // Keep the registries alive until the future is dropped.
    drop((mirror, registry));
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse_args(&args) {
        Ok(Some(opts)) => opts,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pullcheck-testkit: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pullcheck-testkit: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pullcheck-testkit: {e}");
            ExitCode::FAILURE
        }
    }
}
