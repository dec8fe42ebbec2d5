//! The integration tests of `pullcheck-cli`, one binary (`cargo test -p pullcheck-cli --test it`).

mod cli;
mod explain_mirrors;
mod kubernetes;
mod serve;
mod substitution;
mod util;
