//! Walks the credential chain against a real cluster and prints it, as `pullcheck explain`
//! will.
//!
//! ```text
//! cargo run -p pullcheck-kube --example pull-secrets -- \
//!     [--kubeconfig FILE] [--context NAME] [--namespace NS] \
//!     [--template NAME | --template-file FILE | --manifests FILE]
//! ```
//!
//! With neither `--template` nor `--template-file`, the build Pod has no template (so the
//! `default` ServiceAccount's secrets). With `--manifests`, each workload of the file is
//! walked instead. Secret data is never printed: only names, types and data keys.

use std::path::PathBuf;
use std::process::ExitCode;

use pullcheck_kube::{
    Cluster, ClusterOptions, TemplateSource, read_manifests_file, walk_pull_secrets_many,
};

struct Args {
    options: ClusterOptions,
    template: TemplateSource,
    manifests: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        options: ClusterOptions::default(),
        template: TemplateSource::None,
        manifests: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--kubeconfig" => args.options.kubeconfig = Some(value()?.into()),
            "--context" => args.options.context = Some(value()?),
            "--namespace" | "-n" => args.options.namespace = value()?,
            "--template" => args.template = TemplateSource::Name(value()?),
            "--template-file" => args.template = TemplateSource::File(value()?.into()),
            "--manifests" => args.manifests = Some(value()?.into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let cluster = Cluster::connect(&args.options).await?;
    println!(
        "API server {}, namespace {:?}",
        cluster.url(),
        cluster.namespace()
    );
    let chains = match &args.manifests {
        Some(path) => {
            let manifests = read_manifests_file(path)?;
            for skipped in &manifests.skipped {
                println!("skipped {skipped}");
            }
            walk_pull_secrets_many(&cluster, &manifests.pull_secrets()).await?
        }
        None => vec![cluster.build_pull_secrets(&args.template).await?],
    };
    for chain in chains {
        println!("\n{chain}");
        for secret in &chain.secrets {
            println!("  -> {secret:?}");
        }
        for warning in &chain.warnings {
            println!("  warning: {warning}");
        }
    }
    Ok(())
}
