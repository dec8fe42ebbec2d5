//! Prints the image uses of each pipeline file given as an argument, one a line.
//!
//! `cargo run -p pullcheck-input --example read_pipeline -- .vela.yml`

use pullcheck_input::{Disposition, read_pipeline_file};

fn main() {
    let mut failed = false;
    for arg in std::env::args().skip(1) {
        match read_pipeline_file(arg.as_ref()) {
            Ok(uses) => {
                for u in uses {
                    let o = &u.origin;
                    let at = format!(
                        "{}:{}:{}",
                        o.file.as_deref().unwrap_or("-"),
                        o.line.map_or("?".into(), |l| l.to_string()),
                        o.column.map_or("?".into(), |c| c.to_string())
                    );
                    let what = match &u.disposition {
                        Disposition::Check => "check".to_owned(),
                        Disposition::Skip(reason) => format!("skip: {reason:?}"),
                        Disposition::Invalid(problems) => {
                            format!("invalid: {}", pullcheck_input::Problem::join(problems))
                        }
                        Disposition::UnknownPolicy { written, problems } => format!(
                            "unknown pull policy {written:?}: {}",
                            pullcheck_input::Problem::join(problems)
                        ),
                        Disposition::Unresolved(u) => {
                            let names: Vec<&str> =
                                u.variables.iter().map(|v| v.name.as_str()).collect();
                            format!("unresolved: waits for {}", names.join(", "))
                        }
                    };
                    let stage = o
                        .stage
                        .as_deref()
                        .map(|s| format!("{s}/"))
                        .unwrap_or_default();
                    println!(
                        "{at} {:?} {stage}{} {} pull={} {what}",
                        o.kind, o.name, u.image, u.policy
                    );
                }
            }
            Err(e) => {
                failed = true;
                println!("error: {e}");
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
