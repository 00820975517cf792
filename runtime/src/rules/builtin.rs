//! The built-in rule pack: every file under `runtime/rules/`, embedded in the binary.
//! Regenerate this list with `runtime/rules/gen-builtin.sh`; a test checks that it matches
//! the directory.

/// `(path under runtime/rules/, file text)` for every built-in rule.
pub(crate) const BUILTIN_RULES: &[(&str, &str)] = &[
    ("go/nan-comparison.toml", include_str!("../../rules/go/nan-comparison.toml")),
    ("go/print-format-directive.toml", include_str!("../../rules/go/print-format-directive.toml")),
    ("go/self-assignment.toml", include_str!("../../rules/go/self-assignment.toml")),
    ("go/self-comparison.toml", include_str!("../../rules/go/self-comparison.toml")),
    ("go/strings-replace-zero.toml", include_str!("../../rules/go/strings-replace-zero.toml")),
    ("go/unreachable-code.toml", include_str!("../../rules/go/unreachable-code.toml")),
    ("go/xor-as-pow.toml", include_str!("../../rules/go/xor-as-pow.toml")),
    ("java/empty-catch.toml", include_str!("../../rules/java/empty-catch.toml")),
    (
        "java/format-brace-placeholder.toml",
        include_str!("../../rules/java/format-brace-placeholder.toml"),
    ),
    ("java/nan-comparison.toml", include_str!("../../rules/java/nan-comparison.toml")),
    ("java/self-assignment.toml", include_str!("../../rules/java/self-assignment.toml")),
    ("java/self-comparison.toml", include_str!("../../rules/java/self-comparison.toml")),
    ("java/split-regex-metachar.toml", include_str!("../../rules/java/split-regex-metachar.toml")),
    (
        "java/string-literal-identity.toml",
        include_str!("../../rules/java/string-literal-identity.toml"),
    ),
    ("java/xor-as-pow.toml", include_str!("../../rules/java/xor-as-pow.toml")),
    (
        "javascript/duplicate-object-key.toml",
        include_str!("../../rules/javascript/duplicate-object-key.toml"),
    ),
    ("javascript/for-direction.toml", include_str!("../../rules/javascript/for-direction.toml")),
    ("javascript/invalid-typeof.toml", include_str!("../../rules/javascript/invalid-typeof.toml")),
    ("javascript/nan-comparison.toml", include_str!("../../rules/javascript/nan-comparison.toml")),
    (
        "javascript/self-comparison.toml",
        include_str!("../../rules/javascript/self-comparison.toml"),
    ),
    (
        "javascript/unreachable-code.toml",
        include_str!("../../rules/javascript/unreachable-code.toml"),
    ),
    ("javascript/xor-as-pow.toml", include_str!("../../rules/javascript/xor-as-pow.toml")),
    ("python/assert-tuple.toml", include_str!("../../rules/python/assert-tuple.toml")),
    ("python/bare-except-pass.toml", include_str!("../../rules/python/bare-except-pass.toml")),
    ("python/duplicate-dict-key.toml", include_str!("../../rules/python/duplicate-dict-key.toml")),
    ("python/is-literal.toml", include_str!("../../rules/python/is-literal.toml")),
    (
        "python/late-bound-loop-lambda.toml",
        include_str!("../../rules/python/late-bound-loop-lambda.toml"),
    ),
    (
        "python/logging-brace-format.toml",
        include_str!("../../rules/python/logging-brace-format.toml"),
    ),
    (
        "python/misplaced-format-args.toml",
        include_str!("../../rules/python/misplaced-format-args.toml"),
    ),
    (
        "python/mutable-default-arg.toml",
        include_str!("../../rules/python/mutable-default-arg.toml"),
    ),
    ("python/nan-comparison.toml", include_str!("../../rules/python/nan-comparison.toml")),
    (
        "python/raise-not-implemented.toml",
        include_str!("../../rules/python/raise-not-implemented.toml"),
    ),
    ("python/re-flag-as-count.toml", include_str!("../../rules/python/re-flag-as-count.toml")),
    ("python/self-comparison.toml", include_str!("../../rules/python/self-comparison.toml")),
    ("python/unreachable-code.toml", include_str!("../../rules/python/unreachable-code.toml")),
    ("python/xor-as-pow.toml", include_str!("../../rules/python/xor-as-pow.toml")),
    ("rust/let-underscore-lock.toml", include_str!("../../rules/rust/let-underscore-lock.toml")),
    ("rust/self-assignment.toml", include_str!("../../rules/rust/self-assignment.toml")),
    ("rust/self-comparison.toml", include_str!("../../rules/rust/self-comparison.toml")),
    ("rust/xor-as-pow.toml", include_str!("../../rules/rust/xor-as-pow.toml")),
];
