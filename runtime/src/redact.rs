//! Redaction: secret-looking strings (API keys and tokens of well-known shapes, private key
//! blocks, the values of `password=`/`token:`-style assignments, passwords in URLs) replaced by
//! `[REDACTED:<kind>]` before text leaves the machine for a remote model. The OpenAI-compatible
//! backend applies it to every message when its endpoint is not on loopback, and keeps what it
//! replaced so the user can see it ([`crate::llm::LanguageModel::redactions`]).
//!
//! Precision matters as much as recall here: the text is code the model must read, so an
//! assignment is redacted only when its value is a literal (quoted, or an environment-file
//! line's bare value), never an expression (`password = request.form["password"]` stays).

use std::sync::OnceLock;

use regex::Regex;

/// One replaced string.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Redaction {
    /// What it looked like (`"api key"`, `"private key"`, `"password"`…).
    pub kind: &'static str,
    /// Its line in the original text (1-based).
    pub line: usize,
    /// Its first characters and length, enough for the user to recognise it
    /// (`"sk-p… (51 chars)"`), never the whole secret.
    pub preview: String,
}

/// What was redacted, for the user: one line a string (`api key on line 3 of a message:
/// sk-p… (51 chars)`), at most `max`, then how many more. Empty when nothing was.
pub fn describe(redactions: &[Redaction], max: usize) -> Vec<String> {
    let mut lines: Vec<String> = redactions
        .iter()
        .take(max)
        .map(|r| format!("{} on line {} of a message: {}", r.kind, r.line, r.preview))
        .collect();
    if redactions.len() > max {
        lines.push(format!("and {} more", redactions.len() - max));
    }
    lines
}

struct Rule {
    kind: &'static str,
    re: Regex,
    /// The capture group that is the secret (0: the whole match).
    group: usize,
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let rule = |kind, pattern: &str, group| Rule {
            kind,
            re: Regex::new(pattern).expect("the redaction patterns are valid"),
            group,
        };
        vec![
            rule(
                "private key",
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
                0,
            ),
            rule("api key", r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{20,}", 0),
            rule("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})", 0),
            rule("aws access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
            rule("slack token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
            rule("google api key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
            rule("stripe key", r"\b[rs]k_live_[0-9A-Za-z]{20,}", 0),
            rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", 0),
            rule("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*)", 1),
            rule("password in a url", r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:([^@\s/]{3,})@", 1),
            // `password = "…"`, `"api_key": "…"`, `token: '…'`: a quoted literal.
            rule(
                "password",
                r#"(?i)\b[a-z0-9_\-]*(?:password|passwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key|credentials?)\\?["']?\s*[:=]\s*\\?["']([^"'\n\\]{4,})\\?["']"#,
                1,
            ),
            // `DB_PASSWORD=hunter2` in environment files and shell (no spaces around `=`): a bare
            // value, not an expression.
            rule(
                "password",
                r##"(?m)\b[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*=([^\s'"#()\[\]{}$,;]{4,})(?:[\s,;#]|$)"##,
                1,
            ),
        ]
    })
}

/// `text` with secret-looking strings replaced by `[REDACTED:<kind>]`, and what was replaced.
pub fn redact(text: &str) -> (String, Vec<Redaction>) {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    for rule in rules() {
        for caps in rule.re.captures_iter(text) {
            if let Some(m) = caps.get(rule.group) {
                spans.push((m.start(), m.end(), rule.kind));
            }
        }
    }
    if spans.is_empty() {
        return (text.to_owned(), Vec::new());
    }
    // The earliest first, the longest of those that start together; overlaps dropped.
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out = String::with_capacity(text.len());
    let mut redactions = Vec::new();
    let mut at = 0;
    for (start, end, kind) in spans {
        if start < at {
            continue;
        }
        let secret = &text[start..end];
        let placeholder = format!("[REDACTED:{kind}]");
        if secret == placeholder || secret.starts_with("[REDACTED:") {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(&placeholder);
        let head: String = secret.chars().take(4).collect();
        redactions.push(Redaction {
            kind,
            line: text[..start].matches('\n').count() + 1,
            preview: format!("{head}… ({} chars)", secret.chars().count()),
        });
        at = end;
    }
    out.push_str(&text[at..]);
    (out, redactions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        redact(text).1.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn the_user_sees_kind_line_and_preview_never_the_secret() {
        let text = "a\nkey sk-proj-abcdefghijklmnopqrstuvwx\npassword = \"hunter2hunter2\"\n";
        let (_, found) = redact(text);
        let lines = describe(&found, 20);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("api key on line 2 of a message: sk-p"), "{lines:?}");
        assert!(lines[1].starts_with("password on line 3"), "{lines:?}");
        assert!(
            lines.iter().all(|l| !l.contains("abcdefghijklmnop") && !l.contains("hunter2hunter2"))
        );
        assert_eq!(describe(&found, 1).last().unwrap(), "and 1 more");
        assert!(describe(&[], 20).is_empty());
    }

    #[test]
    fn well_known_secrets_are_replaced() {
        let text = "key = sk-proj-abcdefghijklmnopqrstuvwxyz0123\nghp_abcdefghijklmnopqrstuvwxyz0123456789\nAKIAIOSFODNN7EXAMPLE\n";
        let (out, found) = redact(text);
        assert!(
            !out.contains("sk-proj-abc") && !out.contains("ghp_") && !out.contains("AKIA"),
            "{out}"
        );
        assert_eq!(
            found.iter().map(|r| r.kind).collect::<Vec<_>>(),
            ["api key", "github token", "aws access key id"]
        );
        assert_eq!(found[1].line, 2);
        assert_eq!(found[0].preview, "sk-p… (38 chars)");
    }

    #[test]
    fn private_keys_and_assignments_lose_their_values_only() {
        let text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\npassword = \"hunter2!\"\nDB_PASSWORD=s3cr3tvalue\nurl = \"postgres://app:pa55word@db:5432/x\"\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz123\n";
        let (out, found) = redact(text);
        for secret in [
            "b3BlbnNzaC1rZXk",
            "hunter2!",
            "s3cr3tvalue",
            "pa55word",
            "abcdefghijklmnopqrstuvwxyz123",
        ] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("password = \"[REDACTED:password]\""), "{out}");
        assert!(out.contains("DB_PASSWORD=[REDACTED:password]"), "{out}");
        assert!(out.contains("postgres://app:[REDACTED:password in a url]@db"), "{out}");
        assert_eq!(found.len(), 5, "{found:?}");
    }

    #[test]
    fn code_that_only_names_secrets_is_left_alone() {
        for code in [
            "password = request.form[\"password\"]",
            "def check_password(password: str) -> bool:",
            "let token = lexer.next_token();",
            "if api_key is None: raise ValueError('missing')",
            "PASSWORD_MIN_LENGTH = 8",
            "DB_PASSWORD=os.environ.get(\"DB_PASSWORD\")",
            "export GITHUB_TOKEN=$(gh auth token)",
            "const TOKEN_KINDS = ['a', 'b'];",
            "the sk-learn docs",
        ] {
            assert_eq!(kinds(code), Vec::<&str>::new(), "{code}");
            assert_eq!(redact(code).0, code);
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let (once, _) = redact("secret: 'abcdefgh'\nsk-abcdefghijklmnopqrstuvwxyz\n");
        let (twice, found) = redact(&once);
        assert_eq!(once, twice);
        assert!(found.is_empty(), "{found:?}");
    }
}
