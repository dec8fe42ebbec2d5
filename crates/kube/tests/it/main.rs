//! The integration tests of `pullcheck-kube`, one binary (`cargo test -p pullcheck-kube --test it`).

mod cluster;
mod deploy;
mod template;
mod workloads;
