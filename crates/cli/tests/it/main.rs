//! The integration tests of `pullcheck-cli`, one binary (`cargo test -p pullcheck-cli --test it`).

mod big_configs;
mod cli;
mod credential_providers;
mod egress;
mod explain_mirrors;
mod kubernetes;
mod placeholder;
mod runtimes;
mod serve;
mod substitution;
mod tls;
mod token_server;
mod util;
mod vela_plugin;
mod version_warnings;
