//! `sift memory`: the notes in `.sift/memory/` (see `sift_engine::memory`): add, list, show,
//! edit, remove, verify and search them. Every command checks the notes against the code as
//! it is now (the index is refreshed first, as `sift search` does).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use sift_engine::index::CodeIndex;
use sift_engine::memory::{self, IndexedCode, Memory, Note, Notebook, State, find};
use sift_engine::sandbox::Policy;

use super::{RepoArgs, WalkArgs};

/// Arguments of `sift memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
enum MemoryCommand {
    /// Write a note: one fact about this codebase, citing the code it is about.
    Add {
        #[command(flatten)]
        repo: RepoArgs,
        /// Code the note is about: PATH, PATH:LINES (`12` or `12-30`) or PATH#SYMBOL
        /// (`name` or `Class.name`); repeatable.
        #[arg(long = "cite", value_name = "CITATION")]
        cite: Vec<String>,
        /// The note's title [default: its first line].
        #[arg(long)]
        title: Option<String>,
        /// Paths the note is about (globs, repeatable) [default: the whole repository].
        #[arg(long = "scope", value_name = "GLOB")]
        scope: Vec<String>,
        /// Where it came from (`task: …`, `commit: …`, `review: …`).
        #[arg(long)]
        origin: Option<String>,
        /// The fact.
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// List the notes with their state (fresh, moved, stale).
    List {
        #[command(flatten)]
        repo: RepoArgs,
        /// Only the stale notes.
        #[arg(long)]
        stale: bool,
        /// One JSON object per note per line.
        #[arg(long)]
        json: bool,
    },
    /// Show a note, its citations and where each is now.
    Show {
        #[command(flatten)]
        repo: RepoArgs,
        /// The note's name (its file name without `.md`).
        slug: String,
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Change a note (in $VISUAL or $EDITOR without options); its citations are re-anchored to
    /// the code as it is now.
    Edit {
        #[command(flatten)]
        repo: RepoArgs,
        /// The note's name.
        slug: String,
        /// A new title.
        #[arg(long)]
        title: Option<String>,
        /// A new text.
        #[arg(long)]
        text: Option<String>,
        /// Replace the citations with these (repeatable).
        #[arg(long = "cite", value_name = "CITATION")]
        cite: Vec<String>,
    },
    /// Delete notes.
    Rm {
        #[command(flatten)]
        repo: RepoArgs,
        /// The notes' names.
        #[arg(required = true)]
        slugs: Vec<String>,
    },
    /// Check every note and follow code that moved; with names, confirm those notes still hold
    /// (re-anchor them to the code as it is now). Exits 1 while a note is stale.
    Verify {
        #[command(flatten)]
        repo: RepoArgs,
        /// Notes to confirm [default: check all, confirm none].
        slugs: Vec<String>,
    },
    /// Find the notes about a question (what the agent and the reviewer are given).
    Search {
        #[command(flatten)]
        repo: RepoArgs,
        /// What to look for.
        #[arg(required = true, value_name = "QUERY")]
        query: Vec<String>,
        /// Number of notes.
        #[arg(short = 'k', long = "limit", default_value_t = 5)]
        k: usize,
        /// One JSON object per note per line.
        #[arg(long)]
        json: bool,
    },
}

/// What every subcommand works on: the refreshed index and the sandbox's policy.
pub(super) struct Ctx {
    root: PathBuf,
    index: CodeIndex,
    policy: Policy,
    pub(super) memory: Memory,
}

impl Ctx {
    pub(super) fn open(repo: &RepoArgs) -> Result<Ctx> {
        let root = repo.folder()?;
        let config = super::load_config(&root, &[])?;
        let policy = sift_engine::agent::setup::policy(&root, &config)?;
        let index = super::search::open_index(&root, &WalkArgs::default(), false)?;
        let memory = Memory::open(&sift_engine::store::open(&root)?);
        Ok(Ctx { root, index, policy, memory })
    }

    pub(super) fn code(&self) -> Result<IndexedCode<'_>> {
        Ok(IndexedCode::new(&self.index, &self.policy))
    }

    fn book(&self) -> Result<Notebook> {
        let book = Notebook::load(self.memory.clone(), &self.code()?);
        for broken in &book.broken {
            eprintln!("warning: .sift/memory/{broken} (left as it is; fix or remove it)");
        }
        Ok(book)
    }

    pub(super) fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }
}

fn one_line(note: &Note, state: Option<&State>) -> String {
    let cites: Vec<String> = note.front.citations.iter().map(|c| c.label()).collect();
    let mut line =
        format!("{:<6} {}  {}", state.map_or("?", State::word), note.slug, note.front.title);
    if !cites.is_empty() {
        line.push_str(&format!("  [{}]", cites.join(", ")));
    }
    if let Some(why) = state.and_then(|s| s.stale.as_deref()) {
        line.push_str(&format!("\n       stale: {why}"));
    }
    line
}

/// Runs `sift memory`.
#[allow(clippy::print_stdout)]
pub fn run(args: MemoryArgs) -> Result<ExitCode> {
    match args.command {
        MemoryCommand::Add { repo, cite, title, scope, origin, text } => {
            let ctx = Ctx::open(&repo)?;
            let text = text.join(" ");
            let draft = memory::Draft {
                title: title.as_deref(),
                scope,
                origin,
                ..memory::Draft::new(&text, &cite)
            };
            let note = memory::new_note(&ctx.memory, &ctx.code()?, draft)?;
            let path = ctx.memory.write(&note)?;
            println!("wrote {} ({})", note.slug, ctx.shown(&path));
            for c in &note.front.citations {
                println!("  cites {} (lines {})", c.label(), c.lines.as_deref().unwrap_or("?"));
            }
        }
        MemoryCommand::List { repo, stale, json } => {
            let ctx = Ctx::open(&repo)?;
            let book = ctx.book()?;
            let mut shown = 0;
            let mut stale_count = 0;
            for note in &book.notes {
                let state = book.states.notes.get(&note.slug);
                let is_stale = state.is_some_and(|s| !s.is_fresh());
                stale_count += usize::from(is_stale);
                if stale && !is_stale {
                    continue;
                }
                shown += 1;
                if json {
                    println!("{}", memory::to_json(note, state));
                } else {
                    println!("{}", one_line(note, state));
                }
            }
            if !json {
                println!(
                    "{} note{}, {stale_count} stale{}",
                    book.notes.len(),
                    if book.notes.len() == 1 { "" } else { "s" },
                    if shown == 0 && !book.notes.is_empty() { " (none shown)" } else { "" }
                );
            }
        }
        MemoryCommand::Show { repo, slug, json } => {
            let ctx = Ctx::open(&repo)?;
            let book = ctx.book()?;
            let Some((note, state)) = book.get(&slug) else {
                return Err(ctx.memory.read(&slug).err().map_or_else(
                    || anyhow::anyhow!("note {slug:?} could not be checked"),
                    anyhow::Error::from,
                ));
            };
            if json {
                println!("{}", memory::to_json(note, state));
                return Ok(ExitCode::SUCCESS);
            }
            println!("{}  ({})", note.front.title, state.map_or("unchecked", State::word));
            println!(
                "{} by {}, {}{}",
                ctx.shown(&ctx.memory.path(&note.slug)),
                note.front.author.as_str(),
                note.front.updated,
                note.front.origin.as_ref().map(|o| format!(", from {o}")).unwrap_or_default()
            );
            if !note.front.scope.is_empty() {
                println!("scope: {}", note.front.scope.join(", "));
            }
            for (i, c) in note.front.citations.iter().enumerate() {
                let checked = state.and_then(|s| s.citations.get(i));
                let status =
                    checked.map_or("?".into(), |s| format!("{:?}", s.status).to_lowercase());
                let now = checked.and_then(|s| s.now.as_deref()).map(|n| format!(" now at {n}"));
                let why = checked.and_then(|s| s.reason.as_deref()).map(|r| format!(": {r}"));
                println!(
                    "  cites {} ({status}){}{}",
                    c.label(),
                    now.unwrap_or_default(),
                    why.unwrap_or_default()
                );
            }
            println!("\n{}", note.body);
        }
        MemoryCommand::Edit { repo, slug, title, text, cite } => {
            let ctx = Ctx::open(&repo)?;
            let mut note = ctx.memory.read(&slug)?;
            if title.is_none() && text.is_none() && cite.is_empty() {
                note = edit_in_editor(&ctx.memory, &slug)?;
            }
            if let Some(title) = title {
                note.front.title = title;
            }
            if let Some(text) = text {
                if text.trim().is_empty() {
                    bail!("a note needs some text (use `sift memory rm {slug}` to delete it)");
                }
                note.body = text.trim().to_string();
            }
            let code = ctx.code()?;
            if !cite.is_empty() {
                note.front.citations =
                    cite.iter().map(|s| memory::cite(&code, s)).collect::<Result<Vec<_>, _>>()?;
            }
            if let Err(e) = memory::reanchor(&mut note, &code) {
                eprintln!("note: {e}; the citation is kept as it was (replace it with --cite)");
                note.front.updated = memory::today();
            }
            ctx.memory.write(&note)?;
            println!("updated {slug}");
        }
        MemoryCommand::Rm { repo, slugs } => {
            let ctx = Ctx::open(&repo)?;
            for slug in &slugs {
                ctx.memory.remove(slug)?;
                println!("removed {slug}");
            }
        }
        MemoryCommand::Verify { repo, slugs } => {
            let ctx = Ctx::open(&repo)?;
            let code = ctx.code()?;
            for slug in &slugs {
                let mut note = ctx.memory.read(slug)?;
                memory::reanchor(&mut note, &code)?;
                ctx.memory.write(&note)?;
                println!("confirmed {slug}");
            }
            let book = ctx.book()?;
            let mut stale = 0;
            let mut followed = 0;
            for note in &book.notes {
                let Some(state) = book.states.notes.get(&note.slug) else { continue };
                if !state.is_fresh() {
                    stale += 1;
                    println!("{}", one_line(note, Some(state)));
                } else if state.word() == "moved" {
                    let mut moved = note.clone();
                    memory::reanchor(&mut moved, &code)?;
                    moved.front.updated.clone_from(&note.front.updated);
                    ctx.memory.write(&moved)?;
                    followed += 1;
                }
            }
            println!(
                "{} note{} checked: {stale} stale, {followed} followed their code to where it moved",
                book.notes.len(),
                if book.notes.len() == 1 { "" } else { "s" }
            );
            if stale > 0 {
                eprintln!(
                    "a stale note's code changed: edit it (`sift memory edit SLUG`), confirm it (`sift memory verify SLUG`) or remove it"
                );
                return Ok(ExitCode::from(1));
            }
        }
        MemoryCommand::Search { repo, query, k, json } => {
            let ctx = Ctx::open(&repo)?;
            let book = ctx.book()?;
            let semantic = sift_engine::embeddings::Semantic::load(
                sift_engine::open::embed_config(&ctx.root).map_err(|e| e.to_string()),
            );
            let vectors = find::NoteVectors::default();
            let text = query.join(" ");
            let ask = find::Ask { text: &text, paths: &[], k, fresh_only: false };
            let answers = find::find(&book.notes, &book.states, &ask, Some((&semantic, &vectors)));
            for a in &answers {
                if json {
                    println!("{}", memory::to_json(a.note, a.state));
                } else {
                    println!("{}", one_line(a.note, a.state));
                }
            }
            if answers.is_empty() && !json {
                eprintln!("no notes about {text:?}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the note in the user's editor; the result must parse (else the file is put back as
/// it was and the error says why).
fn edit_in_editor(memory: &Memory, slug: &str) -> Result<Note> {
    let editor = sift_engine::env::get("VISUAL")
        .or_else(|| sift_engine::env::get("EDITOR"))
        .ok_or_else(|| anyhow::anyhow!("set $EDITOR, or pass --title, --text or --cite"))?;
    let path = memory.path(slug);
    let before = std::fs::read_to_string(&path)?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .with_context(|| format!("cannot run the editor {editor:?}"))?;
    if !status.success() {
        bail!("the editor exited with {status}; the note is unchanged");
    }
    match memory.read(slug) {
        Ok(note) => Ok(note),
        Err(e) => {
            let kept = path.with_extension("md.rejected");
            std::fs::write(&kept, std::fs::read(&path)?)?;
            sift_engine::index::write_atomic(&path, before.as_bytes())?;
            bail!("{e}; the note is back as it was, your edit is in {}", kept.display())
        }
    }
}
