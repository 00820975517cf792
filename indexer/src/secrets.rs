//! Which files hold secrets: the one definition the index (which never indexes them) and the
//! sandbox's path policy (which never reads them into a prompt) both use, so the two cannot
//! disagree. The patterns are the `[sandbox] secret_patterns` of the configuration; the
//! defaults are [`DEFAULT_SECRET_PATTERNS`].
//!
//! A pattern without a `/` matches a file's name in any folder (`*.pem` matches `a/b/key.pem`);
//! one with a `/` matches the workspace-relative path (`**/.aws/credentials`), as in
//! `.gitignore`. Matching is on names only: a folder named `.env` (a Python virtual
//! environment, often) is not a secret, the files in it are judged by their own names.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The default secret patterns: environment files, private keys and certificates, SSH keys,
/// and the credential files of common tools. `id_*` is spelled out as the SSH key names
/// (`id_rsa`, `id_ed25519`…) so that `id_generator.rs` stays code.
pub const DEFAULT_SECRET_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.*",
    "*credentials.json",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    "secrets.toml",
    "secrets.yaml",
    "secrets.yml",
];

/// A compiled list of secret patterns.
#[derive(Debug, Clone)]
pub struct SecretPatterns {
    names: GlobSet,
    paths: GlobSet,
    patterns: Vec<String>,
}

impl SecretPatterns {
    /// Compiles `patterns` (globs as described in the module documentation); the error names
    /// the pattern that does not parse.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<SecretPatterns, String> {
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        let mut kept = Vec::new();
        for p in patterns {
            let p = p.as_ref().trim();
            if p.is_empty() {
                continue;
            }
            let glob = GlobBuilder::new(p.trim_start_matches('/'))
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("secret pattern {p:?} is not a glob: {e}"))?;
            if p.contains('/') {
                paths.add(glob);
            } else {
                names.add(glob);
            }
            kept.push(p.to_owned());
        }
        let build = |b: GlobSetBuilder| b.build().map_err(|e| format!("secret patterns: {e}"));
        Ok(SecretPatterns { names: build(names)?, paths: build(paths)?, patterns: kept })
    }

    /// The defaults ([`DEFAULT_SECRET_PATTERNS`]).
    pub fn defaults() -> SecretPatterns {
        SecretPatterns::new(DEFAULT_SECRET_PATTERNS).expect("the default secret patterns parse")
    }

    /// None: nothing is a secret (for callers that opted out).
    pub fn none() -> SecretPatterns {
        SecretPatterns::new::<&str>(&[]).expect("an empty set parses")
    }

    /// Whether the file at `rel` (relative to the workspace root) matches a pattern.
    pub fn is_secret(&self, rel: &Path) -> bool {
        if rel.file_name().is_some_and(|name| self.names.is_match(Path::new(name))) {
            return true;
        }
        !self.paths.is_empty() && self.paths.is_match(rel)
    }

    /// The patterns, as given (for messages and `sift status`).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// Two sets are the same when their patterns are.
impl PartialEq for SecretPatterns {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for SecretPatterns {}

impl Default for SecretPatterns {
    fn default() -> Self {
        SecretPatterns::defaults()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_catch_the_usual_secrets_and_leave_code_alone() {
        let s = SecretPatterns::defaults();
        for secret in [
            ".env",
            "app/.env.production",
            "deploy/server.pem",
            "tls.key",
            "home/.ssh/id_rsa",
            "id_ed25519.pub",
            ".aws/credentials",
            "gcp-credentials.json",
            ".netrc",
            ".git-credentials",
            "config/secrets.yaml",
        ] {
            assert!(s.is_secret(Path::new(secret)), "{secret} should be a secret");
        }
        for code in [
            "src/main.rs",
            "src/id_generator.rs",
            "env.rs",
            ".env/lib/site.py",
            "keys.rs",
            "docs/credentials.md.txt/readme.rs",
            "environment.py",
        ] {
            assert!(!s.is_secret(Path::new(code)), "{code} should not be a secret");
        }
    }

    #[test]
    fn patterns_with_a_slash_match_the_relative_path() {
        let s = SecretPatterns::new(&["config/*.toml", "**/private/*"]).unwrap();
        assert!(s.is_secret(Path::new("config/prod.toml")));
        assert!(!s.is_secret(Path::new("other/config/prod.toml")));
        assert!(s.is_secret(Path::new("a/b/private/x.txt")));
        assert!(!s.is_secret(Path::new("prod.toml")));
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let err = SecretPatterns::new(&["[oops"]).unwrap_err();
        assert!(err.contains("[oops"), "{err}");
    }
}
