//! A set of rules ready to run: the built-in pack, the rules of a project's `.sift/rules/`, and
//! the effect of `.sift/review.toml` on them.

use std::path::Path;
use std::sync::OnceLock;

use sift_indexer::Language;

use super::builtin::BUILTIN_RULES;
use super::config::{ReviewConfig, Switch, path_silence, per_path_silence};
use super::error::{Result, ReviewError};
use super::rule::Rule;

/// Rules plus the review settings that came with a configuration. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RulePack {
    rules: Vec<Rule>,
    include: Vec<String>,
    exclude: Vec<String>,
    /// Path glob → rule id globs off there (`[rules.per_path_disable]`).
    per_path_disable: Vec<(String, Vec<String>)>,
    max_findings: Option<usize>,
    /// Whether `history/reintroduced-fix` (lines a past fix removed) is off.
    history_off: bool,
}

impl RulePack {
    /// The rules shipped with sift (`runtime/rules/`), those enabled by default. Compiled once
    /// per process.
    pub fn builtin() -> RulePack {
        static BUILTIN: OnceLock<RulePack> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let all = RulePack::builtin_all();
                RulePack {
                    rules: all.rules.into_iter().filter(Rule::enabled_by_default).collect(),
                    ..RulePack::default()
                }
            })
            .clone()
    }

    /// Every built-in rule, including those off by default (what `enable` can turn on).
    pub fn builtin_all() -> RulePack {
        static ALL: OnceLock<RulePack> = OnceLock::new();
        ALL.get_or_init(|| {
            let rules = BUILTIN_RULES
                .iter()
                .map(|(file, text)| {
                    Rule::from_toml_lazy(&format!("builtin:{file}"), text)
                        // The built-in rules are checked by this crate's tests.
                        .unwrap_or_else(|e| panic!("built-in rule does not load: {e}"))
                })
                .collect();
            RulePack { rules, ..RulePack::default() }
        })
        .clone()
    }

    /// A pack of the given rules, with no path filter or limit.
    pub fn from_rules(rules: Vec<Rule>) -> RulePack {
        RulePack { rules, ..RulePack::default() }
    }

    /// Loads every `*.toml` file under `dir` (recursively, in path order) as a rule: a project's
    /// `.sift/rules/`. A missing directory is an empty pack; a bad rule is an error naming the file
    /// and line.
    pub fn load_dir(dir: &Path) -> Result<RulePack> {
        let mut files = Vec::new();
        if dir.is_dir() {
            collect_toml(dir, &mut files)?;
        }
        files.sort();
        let mut texts = Vec::with_capacity(files.len());
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|source| ReviewError::Io { path: file.clone(), source })?;
            texts.push((file.display().to_string(), text));
        }
        RulePack::from_texts(texts)
    }

    /// Rules from the texts of rule files, each with its origin (a path, or where it was read
    /// from, such as `<commit>:.sift/rules/x.toml`), in the order given: what
    /// [`RulePack::load_dir`] does with the files it reads. A bad rule is an error naming the
    /// origin and line; two rules with one id are an error.
    pub fn from_texts(texts: impl IntoIterator<Item = (String, String)>) -> Result<RulePack> {
        let mut rules: Vec<Rule> = Vec::new();
        for (origin, text) in texts {
            let rule = Rule::from_toml(&origin, &text)?;
            if let Some(other) = rules.iter().find(|r| r.id == rule.id) {
                return Err(ReviewError::Rule {
                    origin,
                    line: 1,
                    message: format!("rule id `{}` is already used by {}", rule.id, other.origin),
                });
            }
            rules.push(rule);
        }
        Ok(RulePack { rules, ..RulePack::default() })
    }

    /// Adds `other`'s rules; a rule with the id of one already here replaces it (so a project can
    /// override a built-in rule).
    pub fn extend(&mut self, other: RulePack) {
        for rule in other.rules {
            match self.rules.iter_mut().find(|r| r.id == rule.id) {
                Some(slot) => *slot = rule,
                None => self.rules.push(rule),
            }
        }
    }

    /// Applies a `.sift/review.toml`: turns rules on and off, overrides severities, drops rules
    /// below `min_confidence`, and keeps the path filters and `max_findings` for the review.
    ///
    /// `self` should hold every rule that `enable` may turn on ([`RulePack::builtin_all`] plus the
    /// project's rules); rules off by default stay off unless enabled. An `enable`, `disable` or
    /// severity entry without a `*` that names no rule is an error, to catch typos.
    pub fn apply_config(&mut self, config: &ReviewConfig) -> Result<()> {
        let c = &config.rules;
        let patterns = c
            .enable
            .iter()
            .chain(&c.disable)
            .chain(c.severity.keys())
            .chain(c.per_path_disable.values().flatten());
        for pattern in patterns {
            if !pattern.contains('*')
                && pattern != super::history::RULE_ID
                && !self.rules.iter().any(|r| r.id == *pattern)
            {
                return Err(ReviewError::Config {
                    origin: if config.origin.is_empty() {
                        "review.toml".into()
                    } else {
                        config.origin.clone()
                    },
                    message: format!("[rules] names `{pattern}`, but there is no such rule"),
                });
            }
        }
        self.history_off = matches!(c.switch(super::history::RULE_ID), Switch::Off(_));
        self.rules.retain(|rule| {
            let on = match c.switch(&rule.id) {
                Switch::On(_) => true,
                Switch::Off(_) => false,
                Switch::Default => rule.enabled_by_default,
            };
            on && c.min_confidence.is_none_or(|min| rule.confidence >= min)
        });
        for rule in &mut self.rules {
            // The most specific severity pattern wins.
            if let Some((_, severity)) = c.severity_for(&rule.id) {
                rule.severity = severity;
            }
        }
        self.include = config.paths.include.clone();
        self.exclude = config.paths.exclude.clone();
        self.per_path_disable =
            c.per_path_disable.iter().map(|(p, rules)| (p.clone(), rules.clone())).collect();
        self.max_findings = config.max_findings;
        Ok(())
    }

    /// The rules, in load order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule with id `id`.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// How many rules the pack holds.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the pack holds no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The most findings a review should report (see [`keep_most_important`](super::keep_most_important)).
    pub fn max_findings(&self) -> Option<usize> {
        self.max_findings
    }

    /// Whether the configuration's path filters let `path` (relative to the project root) be
    /// reviewed.
    pub fn includes_path(&self, path: &str) -> bool {
        path_silence(&self.include, &self.exclude, path).is_none()
    }

    /// Whether `[rules.per_path_disable]` turns rule `id` off for `path`.
    pub fn disabled_in(&self, id: &str, path: &str) -> bool {
        per_path_silence(self.per_path_disable.iter().map(|(p, r)| (p, r)), id, path).is_some()
    }

    /// Whether the history check (`history/reintroduced-fix`) runs; on unless disabled.
    pub fn history_enabled(&self) -> bool {
        !self.history_off
    }

    /// Whether any rule runs on `language`.
    pub fn covers(&self, language: Language) -> bool {
        self.rules.iter().any(|r| r.applies_to(language))
    }
}

fn collect_toml(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let io = |source| ReviewError::Io { path: dir.to_path_buf(), source };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            collect_toml(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn config(text: &str) -> ReviewConfig {
        ReviewConfig::from_toml("review.toml", text).unwrap()
    }

    fn ids(pack: &RulePack) -> Vec<&str> {
        pack.rules().iter().map(Rule::id).collect()
    }

    #[test]
    fn builtin_list_matches_the_rules_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
        let mut files = Vec::new();
        collect_toml(&dir, &mut files).unwrap();
        let mut on_disk: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/"))
            .collect();
        on_disk.sort();
        let listed: Vec<String> = BUILTIN_RULES.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(listed, on_disk, "run runtime/rules/gen-builtin.sh");
        for rule in RulePack::builtin_all().rules() {
            let file = rule.origin().trim_start_matches("builtin:");
            assert_eq!(format!("{}.toml", rule.id()), file, "a rule's file is named after its id");
        }
    }

    #[test]
    fn enable_disable_and_severity() {
        let all = RulePack::builtin_all();
        assert!(all.len() >= RulePack::builtin().len());
        let mut pack = all.clone();
        pack.apply_config(&config("[rules]\ndisable = [\"*\"]\nenable = [\"python/*\"]")).unwrap();
        assert!(!pack.is_empty());
        assert!(ids(&pack).iter().all(|id| id.starts_with("python/")), "{:?}", ids(&pack));

        let mut pack = all.clone();
        pack.apply_config(&config(
            "[rules]\ndisable = [\"python/*\"]\nenable = [\"python/is-literal\"]\n[rules.severity]\n\"python/is-literal\" = \"info\"\n\"*\" = \"error\"",
        ))
        .unwrap();
        assert_eq!(pack.rule("python/is-literal").unwrap().severity(), Severity::Info);
        assert!(pack.rule("python/self-comparison").is_none());
        assert!(
            pack.rules()
                .iter()
                .filter(|r| r.id() != "python/is-literal")
                .all(|r| r.severity() == Severity::Error)
        );

        let mut pack = all.clone();
        pack.apply_config(&config("[rules]\nmin_confidence = 0.96")).unwrap();
        assert!(pack.rules().iter().all(|r| r.confidence() >= 0.96));

        let mut pack = all.clone();
        let err =
            pack.apply_config(&config("[rules]\ndisable = [\"python/no-such-rule\"]")).unwrap_err();
        assert!(err.to_string().contains("python/no-such-rule"), "{err}");
    }

    #[test]
    fn off_by_default_rules_need_enable() {
        let all = RulePack::builtin_all();
        let off: Vec<&Rule> = all.rules().iter().filter(|r| !r.enabled_by_default()).collect();
        let builtin = RulePack::builtin();
        for rule in &off {
            assert!(builtin.rule(rule.id()).is_none());
            let mut pack = all.clone();
            pack.apply_config(&ReviewConfig::default()).unwrap();
            assert!(pack.rule(rule.id()).is_none());
            pack = all.clone();
            pack.apply_config(&config(&format!("[rules]\nenable = [\"{}\"]", rule.id()))).unwrap();
            assert!(pack.rule(rule.id()).is_some());
        }
    }

    #[test]
    fn paths_and_limits() {
        let mut pack = RulePack::builtin();
        pack.apply_config(&config("max_findings = 3\n[paths]\ninclude = [\"src/**\"]\nexclude = [\"**/gen/**\", \"*_pb2.py\"]"))
            .unwrap();
        assert_eq!(pack.max_findings(), Some(3));
        assert!(pack.includes_path("src/a.py"));
        assert!(!pack.includes_path("lib/a.py"));
        assert!(!pack.includes_path("src/gen/a.py"));
        assert!(!pack.includes_path("src/x/a_pb2.py"));

        let mut pack = RulePack::builtin();
        pack.apply_config(&config(
            "[rules.per_path_disable]\n\"/a.py\" = [\"python/is-literal\"]\n\"legacy\" = [\"python/*\"]",
        ))
        .unwrap();
        assert!(pack.disabled_in("python/is-literal", "a.py"));
        assert!(!pack.disabled_in("python/is-literal", "src/a.py"), "anchored at the root");
        assert!(!pack.disabled_in("python/self-comparison", "a.py"));
        assert!(pack.disabled_in("python/self-comparison", "src/legacy/b.py"));
        let err = RulePack::builtin()
            .apply_config(&config("[rules.per_path_disable]\n\"a.py\" = [\"python/nope\"]"))
            .unwrap_err();
        assert!(err.to_string().contains("python/nope"), "{err}");
    }

    #[test]
    fn load_dir_reads_project_rules_and_reports_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        assert!(RulePack::load_dir(&dir.path().join("missing")).unwrap().is_empty());
        let rule = |id: &str| {
            format!(
                "id = \"{id}\"\nlanguages = [\"go\"]\nseverity = \"info\"\nconfidence = 0.5\nmessage = \"m\"\nrationale = \"r\"\nquery = '(identifier) @finding'\n"
            )
        };
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.toml"), rule("go/a")).unwrap();
        std::fs::write(dir.path().join("sub/b.toml"), rule("go/b")).unwrap();
        std::fs::write(dir.path().join("notes.md"), "ignored").unwrap();
        let pack = RulePack::load_dir(dir.path()).unwrap();
        assert_eq!(ids(&pack), vec!["go/a", "go/b"]);

        let mut merged = RulePack::builtin();
        let before = merged.len();
        merged.extend(pack);
        assert_eq!(merged.len(), before + 2);

        std::fs::write(
            dir.path().join("c.toml"),
            rule("go/c")
                .replace("'(identifier) @finding'", "'''\n(identifier) @finding\n(nope) @x\n'''"),
        )
        .unwrap();
        let err = RulePack::load_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("c.toml:9: query does not compile for go"), "{err}");
        std::fs::write(dir.path().join("c.toml"), rule("go/a")).unwrap();
        let err = RulePack::load_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("already used"), "{err}");
    }

    #[test]
    fn silencing_names_the_setting_and_agrees_with_what_the_pack_runs() {
        use crate::rules::Silence;
        use crate::rules::history::RULE_ID;
        let configs = [
            "",
            "[rules]\ndisable = [\"python/*\"]\nenable = [\"python/is-literal\"]",
            "[rules]\ndisable = [\"*\"]\nenable = [\"python/*\"]",
            "[rules]\nmin_confidence = 0.9",
            "[paths]\ninclude = [\"src/**\"]\nexclude = [\"**/gen/**\"]",
            "[rules.per_path_disable]\n\"/src/a.py\" = [\"python/*\"]\n\"legacy\" = [\"python/is-literal\"]",
            "[rules]\ndisable = [\"history/reintroduced-fix\"]",
            "[rules]\ndisable = [\"*\"]\n[rules.per_path_disable]\n\"/d.py\" = [\"history/*\"]",
        ];
        let paths = ["src/a.py", "src/gen/b.py", "lib/legacy/c.py", "d.py"];
        let all = RulePack::builtin_all();
        let mut baseline = all.clone();
        baseline.apply_config(&ReviewConfig::default()).unwrap();
        for text in configs {
            let c = config(text);
            let mut pack = all.clone();
            pack.apply_config(&c).unwrap();
            for rule in baseline.rules() {
                for path in paths {
                    let runs = pack.rule(rule.id()).is_some()
                        && pack.includes_path(path)
                        && !pack.disabled_in(rule.id(), path);
                    let silence = c.silencing(rule.id(), Some(rule.confidence()), path);
                    assert_eq!(
                        runs,
                        silence.is_none(),
                        "{text}: {} in {path}: {silence:?}",
                        rule.id()
                    );
                }
            }
            for path in paths {
                let runs = pack.history_enabled()
                    && pack.includes_path(path)
                    && !pack.disabled_in(RULE_ID, path);
                let silence = c.silencing(RULE_ID, None, path);
                assert_eq!(runs, silence.is_none(), "{text}: history in {path}: {silence:?}");
            }
        }

        let c = config(
            "[rules]\ndisable = [\"python/*\"]\nmin_confidence = 0.99\n[paths]\nexclude = [\"gen\"]\n[rules.per_path_disable]\n\"/a.py\" = [\"go/*\"]",
        );
        let why = |id: &str, confidence: f32, path: &str| {
            c.silencing(id, Some(confidence), path).map(|s| (s.key(), s.to_string()))
        };
        assert_eq!(
            why("python/is-literal", 1.0, "x.py"),
            Some(("rules.disable".into(), "rules.disable = \"python/*\"".into()))
        );
        assert_eq!(why("go/x", 0.5, "a.go").unwrap().1, "rules.min_confidence = 0.99");
        assert_eq!(why("go/x", 1.0, "gen/a.go").unwrap().1, "paths.exclude = \"gen\"");
        assert_eq!(
            why("go/x", 1.0, "a.py"),
            Some((
                "rules.per_path_disable.\"/a.py\"".into(),
                "rules.per_path_disable.\"/a.py\" = \"go/*\"".into()
            ))
        );
        assert_eq!(why("go/x", 1.0, "b.go"), None);
        let c = config("[paths]\ninclude = [\"src/**\"]");
        assert_eq!(c.silencing("go/x", None, "lib/a.go"), Some(Silence::NotIncluded));
        assert_eq!(Silence::NotIncluded.value(), None);
    }
}
