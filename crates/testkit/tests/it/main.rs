//! The integration tests of `pullcheck-testkit`, one binary (`cargo test -p pullcheck-testkit --test it`).

mod harness;
mod kube;
