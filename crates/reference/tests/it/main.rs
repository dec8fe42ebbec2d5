//! The integration tests of `pullcheck-reference`, one binary (`cargo test -p pullcheck-reference --test it`).

mod api;
mod messages;
mod oracle;
mod properties;
mod upstream_normalize;
mod upstream_reference;
mod upstream_regexp;
