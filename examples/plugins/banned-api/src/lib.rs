//! `banned-api`: a team's banned APIs, each with the replacement the team uses and why.
//!
//! On every changed line of a Rust, Python, JavaScript or TypeScript file it looks for the
//! banned calls below, plus the team's own list in `.sift/plugins/banned-api.txt` when the plugin is
//! granted `read` (one `language | banned | replacement | why` per line, `#` for comments),
//! and reports each with a fix when the replacement is a plain substitution.
//!
//! It also offers the agent one tool, `banned-apis`, that lists them.
//!
//! `#![no_std]` (with `alloc`): the standard library on `wasm32-wasip2` would import WASI,
//! which sift refuses to give a plugin.

#![no_std]

extern crate alloc;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

wit_bindgen::generate!({
    path: "../../../runtime/wit",
    world: "sift:plugin/plugin",
});

use exports::sift::plugin::checks::{self, ChangedFile, Finding, Fix, Severity};
use exports::sift::plugin::tools::{self, Tool};
use sift::plugin::host::{self, Level};

// `memcmp`, `memcpy` and friends come from wasi-libc's `libc.a` (the target's self-contained
// copy): those functions import nothing, and only what is used is linked.
#[link(name = "c", kind = "static")]
unsafe extern "C" {}

/// The canonical ABI's allocator export, over the global allocator. (On `wasm32-wasip2`
/// wit-bindgen leaves it to wasi-libc's `malloc`; this plugin uses `dlmalloc` instead.)
///
/// # Safety
///
/// Called by the host only, as the canonical ABI specifies.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{Layout, alloc, handle_alloc_error, realloc};
    if new_len == 0 {
        return align as *mut u8;
    }
    // SAFETY: the host passes a power-of-two `align` and, with `old_len` > 0, a block this
    // function returned with that size and alignment.
    unsafe {
        let ptr = if old_len == 0 {
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(old, Layout::from_size_align_unchecked(old_len, align), new_len)
        };
        if ptr.is_null() {
            handle_alloc_error(Layout::from_size_align_unchecked(new_len, align));
        }
        ptr
    }
}

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// One banned API.
struct Banned {
    /// sift's language name, or `*` for all.
    language: String,
    /// The text that is banned (a call's start, `println!(`).
    banned: String,
    /// What the team writes instead.
    replacement: String,
    /// Why.
    why: String,
    /// Whether `banned` can be replaced by `replacement` as it stands.
    fixable: bool,
}

/// The team's built-in list.
const BUILTIN: &[(&str, &str, &str, &str, bool)] = &[
    (
        "rust",
        "println!(",
        "tracing::info!(",
        "library code logs through tracing, so the server's stdout stays the protocol's",
        true,
    ),
    (
        "rust",
        "eprintln!(",
        "tracing::warn!(",
        "library code logs through tracing, so the binary decides where logs go",
        true,
    ),
    (
        "rust",
        "std::thread::sleep(",
        "clock.sleep(",
        "time goes through the Clock trait, so tests can fake it",
        false,
    ),
    (
        "rust",
        "SystemTime::now()",
        "clock.now()",
        "time goes through the Clock trait, so tests can fake it",
        false,
    ),
    (
        "rust",
        "std::process::exit(",
        "return an error from main",
        "exit skips destructors: buffered output and temporary files are lost",
        false,
    ),
    (
        "python",
        "datetime.utcnow()",
        "datetime.now(timezone.utc)",
        "utcnow returns a naive datetime that compares wrongly with aware ones (deprecated in Python 3.12)",
        true,
    ),
    (
        "python",
        "time.sleep(",
        "clock.sleep(",
        "time goes through the clock fixture, so tests can fake it",
        false,
    ),
    (
        "python",
        "print(",
        "log.info(",
        "services log through the logging module, never to stdout",
        false,
    ),
    (
        "javascript",
        "console.log(",
        "logger.info(",
        "the team's logger adds request ids and redacts secrets",
        true,
    ),
    (
        "typescript",
        "console.log(",
        "logger.info(",
        "the team's logger adds request ids and redacts secrets",
        true,
    ),
];

/// The team's own list, in the repository.
const TEAM_LIST: &str = ".sift/plugins/banned-api.txt";

fn banned_list() -> Vec<Banned> {
    let mut list: Vec<Banned> = BUILTIN
        .iter()
        .map(|&(language, banned, replacement, why, fixable)| Banned {
            language: language.to_string(),
            banned: banned.to_string(),
            replacement: replacement.to_string(),
            why: why.to_string(),
            fixable,
        })
        .collect();
    match host::read_file(TEAM_LIST) {
        Ok(text) => {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                let parts: Vec<&str> = line.split('|').map(str::trim).collect();
                if let [language, banned, replacement, why] = parts[..] {
                    if !banned.is_empty() {
                        list.push(Banned {
                            language: language.to_string(),
                            banned: banned.to_string(),
                            replacement: replacement.to_string(),
                            why: why.to_string(),
                            fixable: false,
                        });
                    }
                } else {
                    host::log(
                        Level::Warn,
                        &format!(
                            "{TEAM_LIST}: skipped a line that is not `language | banned | replacement | why`: {line}"
                        ),
                    );
                }
            }
        }
        // Not there, or not granted: the built-in list alone.
        Err(why) => host::log(Level::Debug, &format!("{TEAM_LIST}: {why}")),
    }
    list
}

/// Whether `at` in `line` is inside a `//` or `#` comment or a string (roughly: good enough for
/// a team check, which is why its confidence is below 1).
fn in_comment_or_string(line: &str, at: usize, language: &str) -> bool {
    let before = &line[..at];
    let comment = match language {
        "python" => before.contains('#'),
        _ => before.contains("//"),
    };
    let quotes = before.matches('"').count() - before.matches("\\\"").count();
    comment || quotes % 2 == 1
}

struct BannedApi;

impl checks::Guest for BannedApi {
    fn check_file(file: ChangedFile) -> Result<Vec<Finding>, String> {
        let list = banned_list();
        let applies: Vec<&Banned> =
            list.iter().filter(|b| b.language == "*" || b.language == file.language).collect();
        if applies.is_empty() {
            return Ok(Vec::new());
        }
        let mut findings = Vec::new();
        let mut offset = 0usize;
        for (index, line) in file.new_text.split('\n').enumerate() {
            let number = index as u32 + 1;
            let changed = file.changed.iter().any(|r| r.start <= number && number <= r.end);
            if changed {
                for b in &applies {
                    let mut from = 0;
                    while let Some(found) = line[from..].find(b.banned.as_str()) {
                        let at = from + found;
                        from = at + b.banned.len();
                        // `print(` must not match `pprint(` or `blueprint(`.
                        let word_start = line[..at]
                            .chars()
                            .next_back()
                            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
                        let starts_word = b.banned.starts_with(|c: char| c.is_alphanumeric());
                        if (starts_word && !word_start)
                            || in_comment_or_string(line, at, &file.language)
                        {
                            continue;
                        }
                        let start_col = line[..at].chars().count() as u32 + 1;
                        let end_col = start_col + b.banned.chars().count() as u32;
                        findings.push(Finding {
                            rule: "banned-api".to_string(),
                            severity: Severity::Warning,
                            confidence: 0.9,
                            start_line: number,
                            end_line: number,
                            start_col,
                            end_col,
                            message: format!(
                                "`{}` is banned here: use `{}`",
                                b.banned, b.replacement
                            ),
                            rationale: b.why.clone(),
                            fix: b.fixable.then(|| Fix {
                                start_byte: (offset + at) as u32,
                                end_byte: (offset + at + b.banned.len()) as u32,
                                replacement: b.replacement.clone(),
                            }),
                        });
                    }
                }
            }
            offset += line.len() + 1;
        }
        Ok(findings)
    }
}

impl tools::Guest for BannedApi {
    fn list_tools() -> Vec<Tool> {
        let mut tools = Vec::new();
        tools.push(Tool {
            name: "banned-apis".to_string(),
            description: "The team's banned APIs for a language, with the replacement to use".to_string(),
            schema: r#"{"type":"object","properties":{"language":{"type":"string","description":"rust, python, javascript or typescript"}},"required":["language"]}"#.to_string(),
        });
        tools
    }

    fn call_tool(name: String, arguments: String) -> Result<String, String> {
        if name != "banned-apis" {
            return Err(format!("no tool {name}"));
        }
        // The one argument, without a JSON parser: `"language":"rust"`.
        let language = arguments
            .split("\"language\"")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .ok_or_else(|| "give {\"language\": \"rust\"}".to_string())?;
        let mut out = String::new();
        for b in banned_list().iter().filter(|b| b.language == language || b.language == "*") {
            out.push_str(&format!("- `{}` → `{}`: {}\n", b.banned, b.replacement, b.why));
        }
        if out.is_empty() {
            out = format!("no banned APIs for {language}");
        }
        Ok(out)
    }
}

export!(BannedApi);
