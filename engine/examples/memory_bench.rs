//! What memory notes cost on a real repository: writes N notes (default 1,000) citing real
//! definitions of ROOT into ROOT/.sift/memory/ (use a copy: `bench/memory-bench.sh` makes one),
//! then, side by side in one run, over ROUNDS rounds that each change the same 10 cited files:
//! an incremental index update alone, and the same update followed by the notes' check as a
//! server runs it (re-checking the notes whose files changed; the note files are not re-read,
//! a server's watcher says when one changes; the state cache is written after, untimed). Prints the medians and their ratio, the
//! in-process cost of loading and checking all notes with nothing changed (what `sift memory
//! list` does besides starting), and of finding the notes for a hover.
//!
//! Usage: `memory_bench ROOT [NOTES] [ROUNDS]`.

use std::path::PathBuf;
use std::time::Instant;

use sift_engine::memory::{self, IndexedCode, Memory, Notebook};
use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::sandbox::{Policy, SandboxSettings};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = std::fs::canonicalize(PathBuf::from(
        args.next().ok_or("usage: memory_bench ROOT [NOTES] [ROUNDS]")?,
    ))?;
    let wanted: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(7);
    let store = sift_engine::store::open(&root)?;
    let (index, _) = CodeIndex::open_or_create(&store)?;
    let opts = UpdateOptions::default();
    index.update(&opts, &NoProgress)?;
    let policy = Policy::for_workspace(&root, &SandboxSettings::default())?;
    let memory = Memory::open(&store);
    let _ = std::fs::remove_dir_all(memory.dir());

    // Notes on definitions spread over the repository's Python files: one per file in turn.
    let code = IndexedCode::new(&index, &policy);
    let mut files: Vec<String> =
        index.manifest()?.files.into_keys().filter(|p| p.ends_with(".py")).collect();
    files.sort();
    let mut cited_files: Vec<String> = Vec::new();
    let mut written = 0;
    'outer: for round in 0..8 {
        for rel in &files {
            let Ok(text) = std::fs::read_to_string(root.join(rel)) else { continue };
            let defs = memory::cite::definitions(rel, &text);
            let Some(def) = defs
                .iter()
                .filter(|d| memory::cite::matching(&defs, &d.qualified()).len() == 1)
                .nth(round)
            else {
                continue;
            };
            let spec = format!("{rel}#{}", def.qualified());
            let text = format!(
                "{} is where the {} behaviour lives (note {written}).",
                def.qualified(),
                def.name
            );
            if let Ok(note) = memory::new_note(
                &memory,
                &code,
                memory::Draft::new(&text, std::slice::from_ref(&spec)),
            ) {
                memory.write(&note)?;
                if !cited_files.contains(rel) {
                    cited_files.push(rel.clone());
                }
                written += 1;
                if written == wanted {
                    break 'outer;
                }
            }
        }
    }
    let book = Notebook::load(memory.clone(), &IndexedCode::new(&index, &policy));
    println!("{written} notes citing {} files of {}", cited_files.len(), root.display());
    assert_eq!(book.states.notes.values().filter(|s| s.is_fresh()).count(), written);

    // Ten cited files change each round (a comment appended: the notes stay fresh).
    let touched: Vec<PathBuf> = cited_files
        .iter()
        .step_by(cited_files.len().max(10) / 10)
        .take(10)
        .map(|r| root.join(r))
        .collect();
    let touch = |n: usize| -> std::io::Result<()> {
        for path in &touched {
            let mut text = std::fs::read_to_string(path)?;
            text.push_str(&format!("\n# memory bench {n}\n"));
            std::fs::write(path, text)?;
        }
        Ok(())
    };
    let mut book = book;
    let (mut alone, mut with_notes) = (Vec::new(), Vec::new());
    for n in 0..rounds * 2 {
        touch(n)?;
        // As the server does: with notes, updates keep the definitions they parse for the
        // check; without, they do not (the baseline pays nothing for memory).
        index.keep_definitions(n % 2 == 1);
        let started = Instant::now();
        index.update_paths(&touched, &opts, &NoProgress)?;
        index.reload()?;
        if n % 2 == 1 {
            // As the server does after an update: the note files are not re-read (its watcher
            // says when one changes), the states are checked, and saved once the update is
            // announced (not timed: nobody waits for that write).
            let code = IndexedCode::new(&index, &policy);
            book.recheck_code(&code);
            with_notes.push(started.elapsed().as_secs_f64() * 1000.0);
            book.save();
            assert!(book.checked.rechecked <= 10 * 8, "{:?}", book.checked);
        } else {
            alone.push(started.elapsed().as_secs_f64() * 1000.0);
            // Untimed: a server checks after every update, so the next timed check starts
            // from the commit before it, as a server's does.
            book.recheck_code(&IndexedCode::new(&index, &policy));
        }
    }
    let (a, w) = (median(alone), median(with_notes));
    println!(
        "incremental update of 10 files: {a:.1} ms alone, {w:.1} ms with the notes' check: ratio {:.3} (re-checked {} notes, reused {})",
        w / a,
        book.checked.rechecked,
        book.checked.reused
    );

    let mut list = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let book = Notebook::load(memory.clone(), &IndexedCode::new(&index, &policy));
        assert_eq!(book.notes.len(), written);
        list.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!("load and check {written} notes, nothing changed: {:.1} ms (median)", median(list));

    let probe = book.notes[written / 2].front.citations[0].clone();
    let (start, _) = probe.line_range().unwrap_or((1, 1));
    let started = Instant::now();
    let calls = 1000;
    let mut found = 0;
    for _ in 0..calls {
        found += book.citing(&probe.path, start).len();
    }
    println!(
        "notes for a hover (in process): {:.3} ms per lookup ({found} hits)",
        started.elapsed().as_secs_f64() * 1000.0 / calls as f64
    );
    Ok(())
}
