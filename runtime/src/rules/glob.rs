//! Glob patterns for rule ids and paths, in the gitignore spirit.
//!
//! `*` matches any run of characters except `/`, `?` one character except `/`, and `**` any run
//! including `/` (`**/` also matches nothing, so `**/tests/**` matches `tests/a.py`). A path
//! pattern without a `/` matches any single component (`vendor` matches `a/vendor/b.py`, `*.pb.go`
//! any generated Go file); one with a `/` is matched from the start of the path. A pattern that
//! matches a directory matches everything below it (`src/legacy` matches `src/legacy/x.py`).
//! In rule ids (`[rules]` lists) `*` matches everything, `/` included.

/// Whether the whole of `text` matches `pattern`.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    match_bytes(pattern.as_bytes(), text.as_bytes())
}

/// Whether the rule id `id` matches `pattern`; here `*` also matches `/`, so `*` is every rule and
/// `*/self-comparison` that rule in every language.
pub(crate) fn matches_id(pattern: &str, id: &str) -> bool {
    let pattern = pattern.replace("**", "*").replace('*', "**");
    match_bytes(pattern.as_bytes(), id.as_bytes())
}

/// Whether `path` (relative, `/`-separated; `\` and a leading `./` are accepted) matches the path
/// pattern `pattern`.
pub(crate) fn matches_path(pattern: &str, path: &str) -> bool {
    let path = path.replace('\\', "/");
    let path = path.trim_start_matches("./").trim_start_matches('/');
    let pattern = pattern.trim_start_matches("./");
    let pattern = pattern.strip_suffix('/').unwrap_or(pattern);
    if pattern.is_empty() {
        return false;
    }
    if !pattern.contains('/') {
        return path.split('/').any(|component| matches(pattern, component));
    }
    let pattern = pattern.trim_start_matches('/');
    if matches(pattern, path) {
        return true;
    }
    // A directory prefix of the path.
    path.match_indices('/').any(|(i, _)| matches(pattern, &path[..i]))
}

fn match_bytes(p: &[u8], t: &[u8]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => {
            let rest = &p[2..];
            // `**/` may also match no directory at all.
            if let Some(after_slash) = rest.strip_prefix(b"/")
                && match_bytes(after_slash, t)
            {
                return true;
            }
            (0..=t.len()).any(|i| match_bytes(rest, &t[i..]))
        }
        Some(b'*') => {
            let rest = &p[1..];
            for i in 0..=t.len() {
                if match_bytes(rest, &t[i..]) {
                    return true;
                }
                if t.get(i) == Some(&b'/') {
                    break;
                }
            }
            false
        }
        Some(b'?') => t.first().is_some_and(|&c| c != b'/') && match_bytes(&p[1..], char_tail(t)),
        Some(&c) => t.first() == Some(&c) && match_bytes(&p[1..], &t[1..]),
    }
}

/// `t` without its first UTF-8 character.
fn char_tail(t: &[u8]) -> &[u8] {
    let len = match t[0] {
        b if b < 0x80 => 1,
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        _ => 2,
    };
    &t[len.min(t.len())..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_globs() {
        assert!(matches("python/*", "python/self-comparison"));
        assert!(!matches("python/*", "go/self-comparison"));
        assert!(!matches("*", "anything/at-all"));
        assert!(
            matches_id("*", "python/x")
                && matches_id("*/x", "go/x")
                && !matches_id("go/*", "python/x")
        );
        assert!(matches("**", "anything/at-all"));
        assert!(matches("*/self-comparison", "go/self-comparison"));
        assert!(matches("a?c", "abc") && !matches("a?c", "a/c"));
        assert!(matches("é?", "éé"));
    }

    #[test]
    fn path_globs() {
        assert!(matches_path("vendor", "a/vendor/b.py"));
        assert!(matches_path("*.pb.go", "api/v1/x.pb.go"));
        assert!(!matches_path("*.pb.go", "api/v1/x.go"));
        assert!(matches_path("src/legacy", "src/legacy/x.py"));
        assert!(matches_path("src/legacy/", "./src/legacy/x.py"));
        assert!(!matches_path("src/legacy", "other/src/legacy/x.py"));
        assert!(matches_path("**/tests/**", "tests/a.py"));
        assert!(matches_path("**/tests/**", "pkg/tests/sub/a.py"));
        assert!(matches_path("src/**/*.py", "src/a.py"));
        assert!(matches_path("src/**/*.py", "src/x/y/a.py"));
        assert!(!matches_path("src/*.py", "src/x/a.py"));
        assert!(matches_path("/src/*.py", "src\\a.py"));
        assert!(!matches_path("", "a.py"));
    }
}
