//! Parses each argument as an image reference and prints what it means.
//!
//! `cargo run -p pullcheck-reference --example parse -- alpine 'Foo/Bar' '[::1]:5000/app@sha256:abc'`

use pullcheck_reference::Reference;

fn main() {
    for input in std::env::args().skip(1) {
        match Reference::parse_normalized(&input) {
            Ok(r) => println!(
                "{input:?}\n  canonical {}\n  familiar  {}\n  domain    {}\n  path      {}\n  pulls     {}",
                r.canonical(),
                r.familiar(),
                r.domain(),
                r.path(),
                r.manifest_reference()
            ),
            Err(e) => println!(
                "{input:?}\n  error     {}: {}",
                e.kind().as_str(),
                e.message()
            ),
        }
    }
}
