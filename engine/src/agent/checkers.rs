//! The project's own checkers: detected from the workspace (or configured), and what they print
//! read back as problems. The `check` tool runs them on the agent's pending change
//! (`tools/check.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::config::{Checker, Format};

/// One problem a checker reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, relative to the root.
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// The message (first line).
    pub message: String,
}

/// The checkers that fit `root`: `cargo check` for a Cargo workspace, `ruff` for Python
/// projects when it is installed, `tsc` for TypeScript with a `tsconfig.json`, `go vet` for
/// a Go module.
pub fn detect(root: &Path) -> Vec<Checker> {
    let mut out = Vec::new();
    let has = |name: &str| root.join(name).is_file();
    let checker = |name: &str, command: &[&str], format| Checker {
        name: name.into(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        format,
        timeout_secs: crate::config::checker_timeout(),
    };
    if has("Cargo.toml") && on_path("cargo") {
        out.push(checker(
            "cargo",
            &["cargo", "check", "--offline", "--quiet", "--message-format=json"],
            Format::CargoJson,
        ));
    }
    if (has("pyproject.toml") || has("setup.py") || has("setup.cfg") || has("ruff.toml"))
        && on_path("ruff")
    {
        out.push(checker(
            "ruff",
            &["ruff", "check", "--no-cache", "--output-format=json", "."],
            Format::RuffJson,
        ));
    }
    if has("tsconfig.json") {
        let local = root.join("node_modules/.bin/tsc");
        if local.is_file() {
            out.push(checker(
                "tsc",
                &["node_modules/.bin/tsc", "--noEmit", "--pretty", "false"],
                Format::Tsc,
            ));
        } else if on_path("tsc") {
            out.push(checker("tsc", &["tsc", "--noEmit", "--pretty", "false"], Format::Tsc));
        }
    }
    if has("go.mod") && on_path("go") {
        out.push(checker("go", &["go", "vet", "./..."], Format::Lines));
    }
    out
}

fn on_path(program: &str) -> bool {
    sift_env::get_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// For cargo in a scratch copy: build artifacts go to the workspace's own target folder, so a
/// check reuses them (the variables to pass and the folder to make writable).
pub(crate) fn cargo_env(root: &Path) -> (Vec<(String, String)>, Vec<PathBuf>) {
    let target = root.join("target");
    let mut env = vec![("CARGO_TARGET_DIR".to_owned(), target.display().to_string())];
    if let Some(home) = sift_env::get_os("CARGO_HOME") {
        env.push(("CARGO_HOME".to_owned(), home.to_string_lossy().into_owned()));
    }
    (env, vec![target])
}

/// The problems in a checker's output; paths made relative to `dir`.
pub fn parse(format: Format, stdout: &str, stderr: &str, dir: &Path) -> Vec<Problem> {
    let rel = |p: &str| -> String {
        let p = Path::new(p);
        let p = p.strip_prefix(dir).unwrap_or(p);
        p.to_string_lossy().trim_start_matches("./").replace('\\', "/")
    };
    let mut out = Vec::new();
    match format {
        Format::CargoJson => {
            for line in stdout.lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
                if v["reason"] != "compiler-message" {
                    continue;
                }
                let msg = &v["message"];
                let level = msg["level"].as_str().unwrap_or("");
                if level != "error" && level != "warning" {
                    continue;
                }
                let text = msg["message"].as_str().unwrap_or("").to_owned();
                let code =
                    msg["code"]["code"].as_str().map(|c| format!("[{c}]")).unwrap_or_default();
                for span in msg["spans"].as_array().into_iter().flatten() {
                    if span["is_primary"] != true {
                        continue;
                    }
                    out.push(Problem {
                        path: rel(span["file_name"].as_str().unwrap_or("")),
                        line: span["line_start"].as_u64().unwrap_or(0) as usize,
                        message: format!("{level}{code}: {text}"),
                    });
                }
            }
        }
        Format::RuffJson => {
            let Ok(Value::Array(items)) = serde_json::from_str::<Value>(stdout.trim()) else {
                return out;
            };
            for item in items {
                out.push(Problem {
                    path: rel(item["filename"].as_str().unwrap_or("")),
                    line: item["location"]["row"].as_u64().unwrap_or(0) as usize,
                    message: format!(
                        "{} {}",
                        item["code"].as_str().unwrap_or(""),
                        item["message"].as_str().unwrap_or("")
                    ),
                });
            }
        }
        Format::Tsc => {
            for line in stdout.lines().chain(stderr.lines()) {
                let Some((head, message)) = line.split_once("): ") else { continue };
                let Some((path, pos)) = head.rsplit_once('(') else { continue };
                let Some(row) = pos.split(',').next().and_then(|r| r.parse().ok()) else {
                    continue;
                };
                out.push(Problem { path: rel(path), line: row, message: message.to_owned() });
            }
        }
        Format::Lines => {
            for line in stdout.lines().chain(stderr.lines()) {
                let mut parts = line.splitn(4, ':');
                let (Some(path), Some(row)) = (parts.next(), parts.next()) else { continue };
                let Ok(row) = row.trim().parse::<usize>() else { continue };
                let rest: Vec<&str> = parts.collect();
                // `PATH:LINE:COL: msg` or `PATH:LINE: msg` (the message may hold colons).
                let message = match rest.split_first() {
                    Some((col, msg)) if col.trim().parse::<usize>().is_ok() => msg.join(":"),
                    Some(_) => rest.join(":"),
                    None => continue,
                };
                let message = message.trim();
                if message.is_empty() {
                    continue;
                }
                out.push(Problem { path: rel(path), line: row, message: message.to_owned() });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::changed_lines;

    #[test]
    fn cargo_json_gives_the_primary_spans() {
        let line = r#"{"reason":"compiler-message","message":{"level":"error","message":"mismatched types","code":{"code":"E0308"},"spans":[{"file_name":"src/lib.rs","line_start":3,"is_primary":true},{"file_name":"src/lib.rs","line_start":1,"is_primary":false}]}}"#;
        let got = parse(Format::CargoJson, line, "", Path::new("/tmp/x"));
        assert_eq!(
            got,
            [Problem {
                path: "src/lib.rs".into(),
                line: 3,
                message: "error[E0308]: mismatched types".into()
            }]
        );
    }

    #[test]
    fn ruff_tsc_and_plain_lines_are_read() {
        let ruff = r#"[{"filename":"/tmp/x/pkg/a.py","location":{"row":2,"column":1},"code":"F401","message":"`os` imported but unused"}]"#;
        let got = parse(Format::RuffJson, ruff, "", Path::new("/tmp/x"));
        assert_eq!(got[0].path, "pkg/a.py");
        assert_eq!(got[0].line, 2);
        assert!(got[0].message.starts_with("F401"));

        let tsc = "src/a.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.";
        let got = parse(Format::Tsc, tsc, "", Path::new("/tmp/x"));
        assert_eq!((got[0].path.as_str(), got[0].line), ("src/a.ts", 4));

        let vet = "./main.go:12:2: unreachable code\nnot a finding\na.py:3: error: x: y\n";
        let got = parse(Format::Lines, "", vet, Path::new("/tmp/x"));
        assert_eq!(
            got[0],
            Problem { path: "main.go".into(), line: 12, message: "unreachable code".into() }
        );
        assert_eq!(got[1].message, "error: x: y");
    }

    #[test]
    fn configured_checkers_are_read_by_what_they_name() {
        let c = Checker::from_command_line("cargo clippy --message-format=json -q");
        assert_eq!((c.name.as_str(), c.format), ("cargo", Format::CargoJson));
        assert_eq!(c.command, ["sh", "-c", "cargo clippy --message-format=json -q"]);
        let c = Checker::from_command_line("ruff check --output-format json .");
        assert_eq!(c.format, Format::RuffJson);
        assert_eq!(Checker::from_command_line("ruff check .").format, Format::Lines);
        assert_eq!(
            Checker::from_command_line("node_modules/.bin/tsc --noEmit").format,
            Format::Tsc
        );
        let c = Checker::from_command_line("mypy --strict src");
        assert_eq!((c.name.as_str(), c.format), ("mypy", Format::Lines));
    }

    #[test]
    fn changed_lines_are_those_that_differ() {
        let lines = changed_lines(Some("a\nb\nc\n"), "a\nB\nc\nd\n", true);
        assert_eq!(lines.ranges(), [2..=2, 4..=4]);
        let new = changed_lines(None, "x\ny\n", true);
        assert!(new.contains(1) && new.contains(2));
        // Where lines were removed, the line that follows counts for a checker, not a review.
        assert_eq!(changed_lines(Some("a\nb\nc\n"), "a\nc\n", true).ranges(), [2..=2]);
        assert!(changed_lines(Some("a\nb\nc\n"), "a\nc\n", false).is_empty());
    }
}
