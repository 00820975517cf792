//! The one test guard: what a test does when this machine lacks something it needs (a model,
//! a real client, a corpus, an editor).
//!
//! Written once so that every such test behaves alike: [`missing`] fails the test when the test
//! command requires the thing (`SIFT_REQUIRE_<WHAT>=1`, which `scripts/test.sh` sets after it
//! installed it, so a broken install cannot pass as a skip), and otherwise prints one line
//! `skipped: …` and appends the test's name and the reason to the file `SIFT_SKIP_LOG` names,
//! from which `scripts/test.sh` lists every skipped test at its end. `cargo test` alone, on a
//! machine without the parts, skips with that line instead of passing silently.

use std::io::Write as _;

/// What a test needs, named as in its `SIFT_REQUIRE_<NAME>` variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The embedding models and the local language model (`sift model install --llm`).
    Model,
    /// The MCP Python SDK (`SIFT_MCP_PYTHON`).
    McpClient,
    /// Neovim on `PATH`.
    Nvim,
    /// The Django corpus under `bench/work/django`.
    Corpus,
    /// Prism and GitHub's OpenAPI description (`SIFT_PRISM`), the validating mock of the
    /// pull-request bot's tests.
    Prism,
}

impl Need {
    /// The variable that makes this need a requirement.
    pub fn variable(self) -> &'static str {
        match self {
            Need::Model => "SIFT_REQUIRE_MODEL",
            Need::McpClient => "SIFT_REQUIRE_MCP_CLIENT",
            Need::Nvim => "SIFT_REQUIRE_NVIM",
            Need::Corpus => "SIFT_REQUIRE_CORPUS",
            Need::Prism => "SIFT_REQUIRE_PRISM",
        }
    }
}

/// The process environment, as [`missing_in`] reads it.
fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// The test cannot run here because `what` is missing (`how` says how to get it): panics when
/// `need` is required, else says so on stderr and in the skip log. Returns, so the test can
/// `return` after it.
pub fn missing(need: Need, what: &str, how: &str) {
    missing_in(need, what, how, &process_env);
}

/// [`missing`] with the environment read through `env`.
pub fn missing_in(need: Need, what: &str, how: &str, env: &dyn Fn(&str) -> Option<String>) {
    if env(need.variable()).is_some_and(|v| !v.is_empty() && v != "0") {
        panic!("{}=1 but {what}: {how}", need.variable());
    }
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    eprintln!("skipped: {what} ({how})");
    if let Some(log) = env("SIFT_SKIP_LOG").filter(|l| !l.is_empty()) {
        let line = format!("{test}: {what} ({how})\n");
        // Best effort: a log that cannot be written must not fail the test it describes.
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_need_is_logged_with_the_tests_name() {
        let dir = std::env::temp_dir().join(format!("sift-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.txt");
        let path = log.to_str().unwrap().to_owned();
        let env = move |key: &str| (key == "SIFT_SKIP_LOG").then(|| path.clone());
        missing_in(Need::Corpus, "no corpus here", "make one", &env);
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            text.contains(
                "tests::a_missing_need_is_logged_with_the_tests_name: no corpus here (make one)"
            ),
            "{text}"
        );
    }

    #[test]
    #[should_panic(expected = "SIFT_REQUIRE_MCP_CLIENT=1 but no client: install it")]
    fn a_required_need_fails() {
        let env = |key: &str| (key == "SIFT_REQUIRE_MCP_CLIENT").then(|| "1".to_owned());
        missing_in(Need::McpClient, "no client", "install it", &env);
    }

    #[test]
    fn zero_does_not_require() {
        let env = |key: &str| (key == "SIFT_REQUIRE_NVIM").then(|| "0".to_owned());
        missing_in(Need::Nvim, "no nvim", "apt-get install neovim", &env);
    }
}
