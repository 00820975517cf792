//! `sift status`: what the index holds, where, and how big it is; and what in `.sift/` this sift
//! does not know.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use sift_engine::index::CodeIndex;

use super::{RepoArgs, human_bytes};

/// Arguments of `sift status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Status {
    root: String,
    index_dir: String,
    indexed: bool,
    format: u32,
    files: u64,
    chunks: u64,
    binary_files: u64,
    bytes_on_disk: u64,
    languages: std::collections::BTreeMap<String, u64>,
    /// Names in `.sift/` no part of this sift owns (a newer sift's, or put there by hand).
    unknown_entries: Vec<String>,
    /// What the walk leaves out for the sandbox's walls, as of now.
    walls: Walls,
}

/// What the index leaves out because the sandbox's walls say so.
#[derive(Serialize, Default)]
struct Walls {
    /// Symbolic links not followed: their target is outside the repository.
    outside_links: Vec<String>,
    /// Files not indexed: they match the secret patterns.
    secrets: Vec<String>,
}

/// Runs `sift status`.
#[allow(clippy::print_stdout)]
pub fn run(args: StatusArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    let store = sift_engine::store::open(&root)?;
    let layout = sift_engine::index::Layout::new(&store);
    let index = CodeIndex::open(&store)?;
    let mut status = Status {
        root: layout.root.display().to_string(),
        index_dir: layout.index_dir.display().to_string(),
        indexed: index.is_some(),
        format: sift_engine::index::FORMAT_VERSION,
        files: 0,
        chunks: 0,
        binary_files: 0,
        bytes_on_disk: dir_size(&layout.index_dir),
        languages: Default::default(),
        unknown_entries: store.unknown().to_vec(),
        walls: Walls::default(),
    };
    // The walls are judged on the tree as it is now (a walk, no reading), with the
    // configuration's rules.
    let config = super::load_config(&root, &[])?.index()?;
    let walked = sift_engine::index::walk(&layout.root, &config);
    status.walls = Walls { outside_links: walked.outside_links, secrets: walked.secrets };
    if let Some(index) = &index {
        let manifest = index.manifest()?;
        for record in manifest.files.values() {
            if record.skip.is_some() {
                status.binary_files += 1;
            } else {
                status.files += 1;
                *status.languages.entry(record.lang.clone()).or_default() += 1;
            }
        }
        status.chunks = index.num_chunks();
    }
    if args.json {
        println!("{}", serde_json::to_string(&status)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("root:   {}", status.root);
    if !status.unknown_entries.is_empty() {
        println!(
            "other:  {} in {} (not written by this sift; left alone)",
            status.unknown_entries.join(", "),
            store.dir().display()
        );
    }
    if !status.indexed {
        println!("index:  none yet (run `sift index`)");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "index:  {} ({}, format {})",
        status.index_dir,
        human_bytes(status.bytes_on_disk),
        status.format
    );
    println!("files:  {} ({} binary skipped)", status.files, status.binary_files);
    println!("chunks: {}", status.chunks);
    let mut langs: Vec<_> = status.languages.iter().collect();
    langs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let langs: Vec<String> = langs.iter().take(8).map(|(l, n)| format!("{l} {n}")).collect();
    println!("langs:  {}", langs.join(", "));
    let list = |v: &[String]| {
        let shown: Vec<&str> = v.iter().take(5).map(String::as_str).collect();
        let more = if v.len() > 5 { format!(", and {} more", v.len() - 5) } else { String::new() };
        format!("{}{more}", shown.join(", "))
    };
    let w = &status.walls;
    if !w.outside_links.is_empty() {
        println!(
            "walls:  {} symbolic link(s) leading outside the repository not followed: {} ([index] outside_links opts in)",
            w.outside_links.len(),
            list(&w.outside_links)
        );
    }
    if !w.secrets.is_empty() {
        println!(
            "walls:  {} secret file(s) not indexed: {} ([index] index_secrets opts in)",
            w.secrets.len(),
            list(&w.secrets)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn dir_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}
