//! The integration tests of `pullcheck-registry`, one binary (`cargo test -p pullcheck-registry --test it`).

mod egress;
mod faults;
mod first_request;
mod no_secrets;
mod pool;
mod registries;
mod scripted;
mod service;
mod spare;
mod support;
mod tls;
