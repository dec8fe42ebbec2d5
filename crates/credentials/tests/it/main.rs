//! The integration tests of `pullcheck-credentials`, one binary (`cargo test -p pullcheck-credentials --test it`).

mod auth_files;
mod helpers;
mod secrets;
mod upstream_keyring;
mod upstream_provider;
mod userinfo;
