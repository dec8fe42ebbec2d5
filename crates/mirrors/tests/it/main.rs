//! The integration tests of `pullcheck-mirrors`, one binary (`cargo test -p pullcheck-mirrors --test it`).

mod api;
mod files;
mod redaction;
mod upstream_testdata;
