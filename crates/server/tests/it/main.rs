//! `pullcheck serve` end to end, in process: a real HTTP server on loopback, real
//! registries of the testkit (anonymous, htpasswd, token) and its stand-in Kubernetes
//! API. One test binary; the helpers are in `util`.

mod admission;
mod bounds;
mod checks;
mod egress;
mod errors;
mod hardening;
mod kube;
mod limits;
mod reload;
mod tls;
mod token_faults;
mod util;
