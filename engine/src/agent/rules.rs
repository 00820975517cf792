//! Rules files: what the project tells agents, read as other agents read it.
//!
//! - `AGENTS.md` at the root, and nested `AGENTS.md` files, which apply to the files under
//!   their folder (the nearest one is shown last, so it wins where they disagree);
//! - `.sift/RULES.md`;
//! - for users coming from Cursor: `.cursorrules`, and `.cursor/rules/*.mdc` with their front
//!   matter (`alwaysApply: true`, or `globs:` that a touched path matches).
//!
//! The files that apply from the start are pinned in the system prompt (compaction never
//! summarises them). The others are shown to the model in the answer of the first tool call
//! that touches a path they cover, and pinned from then on. A run reports every file that
//! applied.

use std::path::Path;

/// A file longer than this is cut (rules files are meant to be short).
const MAX_RULES_CHARS: usize = 8_000;

/// One rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesFile {
    /// Its path, relative to the root.
    pub path: String,
    /// Its text (front matter removed).
    pub text: String,
    /// Where it applies: `None` everywhere; else files under this folder (`AGENTS.md`) or
    /// matching these globs (`.mdc`).
    pub scope: Option<Scope>,
}

/// Where a scoped rules file applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Files under this folder (relative, `/`-separated, no trailing slash).
    Folder(String),
    /// Files matching any of these globs.
    Globs(Vec<String>),
}

impl RulesFile {
    fn covers(&self, rel: &str) -> bool {
        match &self.scope {
            None => true,
            Some(Scope::Folder(dir)) => rel.starts_with(&format!("{dir}/")),
            Some(Scope::Globs(globs)) => globs.iter().any(|g| {
                globset::Glob::new(g).is_ok_and(|g| g.compile_matcher().is_match(rel))
                    || globset::Glob::new(&format!("**/{g}"))
                        .is_ok_and(|g| g.compile_matcher().is_match(rel))
            }),
        }
    }
}

/// The rules files of a workspace, and which of them the run has applied.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    files: Vec<RulesFile>,
    applied: Vec<usize>,
}

impl Rules {
    /// Finds the rules files under `root`; `files` are the workspace's files (relative paths)
    /// among which nested `AGENTS.md` files are looked for.
    pub fn load(root: &Path, files: &[String]) -> Rules {
        let mut found = Vec::new();
        let read = |rel: &str| -> Option<String> {
            let text = std::fs::read_to_string(root.join(rel)).ok()?;
            let mut text = text.trim().to_owned();
            if text.len() > MAX_RULES_CHARS {
                let mut cut = MAX_RULES_CHARS;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str("\n[cut]");
            }
            (!text.is_empty()).then_some(text)
        };
        for rel in ["AGENTS.md", ".sift/RULES.md", ".cursorrules"] {
            if let Some(text) = read(rel) {
                found.push(RulesFile { path: rel.into(), text, scope: None });
            }
        }
        let mut nested: Vec<&String> = files
            .iter()
            .filter(|f| f.ends_with("/AGENTS.md") && Path::new(f.as_str()).parent().is_some())
            .collect();
        // Outer folders first, so that the nearest file comes last.
        nested.sort_by_key(|f| (f.matches('/').count(), (*f).clone()));
        for rel in nested {
            if let Some(text) = read(rel) {
                let dir = rel.trim_end_matches("/AGENTS.md").to_owned();
                found.push(RulesFile { path: rel.clone(), text, scope: Some(Scope::Folder(dir)) });
            }
        }
        if let Ok(entries) = std::fs::read_dir(root.join(".cursor/rules")) {
            let mut mdc: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".mdc"))
                .collect();
            mdc.sort();
            for name in mdc {
                let rel = format!(".cursor/rules/{name}");
                if let Some(text) = read(&rel) {
                    let (front, body) = front_matter(&text);
                    let always = front.iter().any(|(k, v)| k == "alwaysApply" && v == "true");
                    let globs: Vec<String> = front
                        .iter()
                        .filter(|(k, _)| k == "globs")
                        .flat_map(|(_, v)| v.split(','))
                        .map(|g| g.trim().trim_matches('"').to_owned())
                        .filter(|g| !g.is_empty())
                        .collect();
                    let scope = match (always, globs.is_empty()) {
                        (true, _) => None,
                        (false, false) => Some(Scope::Globs(globs)),
                        // Neither: a rule Cursor applies only when asked for; not applied.
                        (false, true) => continue,
                    };
                    found.push(RulesFile { path: rel, text: body.trim().to_owned(), scope });
                }
            }
        }
        let applied = (0..found.len()).filter(|&i| found[i].scope.is_none()).collect();
        Rules { files: found, applied }
    }

    /// The rules that apply from the start, as one pinned text (empty when there are none).
    pub fn pinned_text(&self) -> String {
        let mut out = String::new();
        for &i in &self.applied {
            let f = &self.files[i];
            out.push_str(&format!("Rules from {} (follow them):\n{}\n\n", f.path, f.text));
        }
        out
    }

    /// When rules files not yet applied cover `rel`: marks them applied and returns the text
    /// that shows them to the model.
    pub fn newly_applying(&mut self, _root: &Path, rel: &str) -> Option<String> {
        let rel = rel.trim_start_matches("./");
        let new: Vec<usize> = (0..self.files.len())
            .filter(|i| !self.applied.contains(i) && self.files[*i].covers(rel))
            .collect();
        if new.is_empty() {
            return None;
        }
        let mut out = String::new();
        for i in new {
            self.applied.push(i);
            let f = &self.files[i];
            out.push_str(&format!("Rules for {rel} from {} (follow them):\n{}\n", f.path, f.text));
        }
        Some(out)
    }

    /// The paths of the rules files that applied so far, in the order they did.
    pub fn applied(&self) -> Vec<String> {
        self.applied.iter().map(|&i| self.files[i].path.clone()).collect()
    }

    /// The text of every applied file, for the pinned part of a compacted conversation.
    pub fn applied_text(&self) -> String {
        let mut out = String::new();
        for &i in &self.applied {
            let f = &self.files[i];
            out.push_str(&format!("Rules from {}:\n{}\n\n", f.path, f.text));
        }
        out
    }
}

/// `---`-fenced `key: value` front matter and the rest.
fn front_matter(text: &str) -> (Vec<(String, String)>, &str) {
    let Some(rest) = text.strip_prefix("---") else { return (Vec::new(), text) };
    let Some(end) = rest.find("\n---") else { return (Vec::new(), text) };
    let pairs = rest[..end]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let body = &rest[end + 4..];
    (pairs, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_rules_are_pinned_and_nested_and_globbed_ones_apply_when_touched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("AGENTS.md"), "Use tabs.").unwrap();
        std::fs::create_dir_all(root.join("web/ui")).unwrap();
        std::fs::write(root.join("web/AGENTS.md"), "No jQuery.").unwrap();
        std::fs::write(root.join("web/ui/AGENTS.md"), "Use React.").unwrap();
        std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
        std::fs::write(
            root.join(".cursor/rules/py.mdc"),
            "---\ndescription: python\nglobs: *.py\nalwaysApply: false\n---\nType hints everywhere.",
        )
        .unwrap();
        std::fs::write(
            root.join(".cursor/rules/manual.mdc"),
            "---\ndescription: x\n---\nOnly on request.",
        )
        .unwrap();
        let files: Vec<String> =
            ["AGENTS.md", "web/AGENTS.md", "web/ui/AGENTS.md", "web/ui/a.ts", "src/m.py"]
                .map(String::from)
                .into();
        let mut rules = Rules::load(root, &files);
        assert!(rules.pinned_text().contains("Use tabs."));
        assert!(!rules.pinned_text().contains("React"));
        assert_eq!(rules.applied(), ["AGENTS.md"]);

        let note = rules.newly_applying(root, "web/ui/a.ts").unwrap();
        // The outer folder's rules first, the nearest last (it wins).
        let (outer, inner) = (note.find("No jQuery").unwrap(), note.find("Use React").unwrap());
        assert!(outer < inner, "{note}");
        assert_eq!(rules.newly_applying(root, "web/ui/b.ts"), None, "shown once");

        let note = rules.newly_applying(root, "src/m.py").unwrap();
        assert!(note.contains("Type hints everywhere."), "{note}");
        assert!(!rules.applied().iter().any(|p| p.contains("manual")));
        assert_eq!(rules.applied().len(), 4);
    }
}
