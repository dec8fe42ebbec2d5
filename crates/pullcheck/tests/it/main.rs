//! The integration tests of `pullcheck-pullcheck`, one binary (`cargo test -p pullcheck-pullcheck --test it`).

mod check;
mod connections;
mod credential_providers;
mod credentials;
mod golden;
mod mirror_credentials;
mod mirrors;
mod util;
