//! The integration tests of `pullcheck-input`, one binary (`cargo test -p pullcheck-input --test it`).

mod compiled_json;
mod corpus;
mod parameters;
mod pipelines;
mod refusals;
mod substitution_and_schema;
mod upstream;
mod yaml_v3;
