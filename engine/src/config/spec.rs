//! What the configuration may hold: one descriptor per section and key (name, kind, default,
//! environment variable, documentation). The loader checks values against them, `sift config
//! show` lists them, and `sift config schema` turns them into a JSON Schema, so the three never
//! disagree. Each section's descriptor lives next to the code that builds its typed section
//! (`index.rs`, `embed.rs`, `model.rs`, `review.rs`).

use std::path::{Path, PathBuf};

/// A section (`[index]`, `[embed]`…): its keys and how it treats keys it does not know.
#[derive(Debug)]
pub struct Section {
    /// The table's name.
    pub name: &'static str,
    /// What it configures (the schema's description).
    pub doc: &'static str,
    /// Whether a key the section does not know is an error (otherwise it is ignored and listed
    /// by `sift config show`).
    pub strict: bool,
    /// Keys refused with a reason of their own, whatever their value (`[model] api_key`: a
    /// secret is never configuration).
    pub refused: &'static [(&'static str, &'static str)],
    /// Keys of the table that another part of sift reads from the repository's own file, with
    /// their own format (`[review]`'s rules: see the review's `settings.rs`): accepted there,
    /// listed as ignored in the other layers, and not in the schema.
    pub elsewhere: &'static [&'static str],
    /// Its keys.
    pub keys: &'static [Key],
}

impl Section {
    /// The key named `name`.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The names of the keys files may set, for messages.
    pub(crate) fn file_key_names(&self) -> String {
        let names: Vec<&str> = self.keys.iter().filter(|k| k.in_files).map(|k| k.name).collect();
        names.join(", ")
    }
}

/// One key of a section.
#[derive(Debug)]
pub struct Key {
    /// The key's name (snake_case, as in the files).
    pub name: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Its value when no layer sets it.
    pub default: Default,
    /// The environment variable that sets it, when one does.
    pub env: Option<&'static str>,
    /// Whether the files and the editor's settings may set it (false: only the environment,
    /// and it is left out of the schema).
    pub in_files: bool,
    /// What it does (the schema's description).
    pub doc: &'static str,
}

/// What values a key takes.
#[derive(Debug)]
pub enum Kind {
    /// `true` or `false`.
    Bool,
    /// A whole number of at least `min`; larger than `max` counts as `max`.
    Count {
        /// The smallest value accepted.
        min: u64,
        /// Larger values are clamped to this.
        max: u64,
    },
    /// Any text; empty: unset.
    Text,
    /// One of a few words.
    Choice {
        /// What the words name, for messages ("a device").
        noun: &'static str,
        /// The words.
        values: &'static [&'static str],
    },
    /// A size in bytes: a positive number, or text such as `"2 MiB"`.
    Size,
    /// A path; relative paths are taken from the layer's folder (the repository for its file
    /// and the editor's settings, the file's folder for the user file); empty: unset.
    Path,
    /// An `http://` or `https://` URL (a trailing `/` is dropped).
    Url,
    /// The name of an environment variable (never its value); empty: unset.
    EnvName,
    /// A list of strings (`["a", "b"]`; from the environment, comma-separated).
    List {
        /// What each item is, for messages ("a host name").
        item: &'static str,
    },
}

/// A key's default.
#[derive(Debug)]
pub enum Default {
    /// Unset (the key's documentation says what that means).
    Unset,
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Count(u64),
    /// Text, read as the key's kind reads text (`"1 MiB"` for a size).
    Text(&'static str),
    /// A list of strings.
    List(&'static [&'static str]),
    /// Computed when the configuration is loaded (`doc` says how).
    Computed {
        /// How, for the schema and `sift config schema`.
        doc: &'static str,
        /// The value.
        value: fn() -> Value,
    },
}

/// A value, as checked against its key's [`Kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// [`Kind::Bool`].
    Bool(bool),
    /// [`Kind::Count`] and [`Kind::Size`] (bytes).
    Count(u64),
    /// [`Kind::Text`], [`Kind::Choice`], [`Kind::Url`], [`Kind::EnvName`].
    Text(String),
    /// [`Kind::Path`].
    Path(PathBuf),
    /// [`Kind::List`].
    List(Vec<String>),
}

impl Value {
    /// The value as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Count(n) => serde_json::Value::from(*n),
            Value::Text(t) => serde_json::Value::String(t.clone()),
            Value::Path(p) => serde_json::Value::String(p.display().to_string()),
            Value::List(items) => serde_json::Value::from(items.clone()),
        }
    }
}

impl std::fmt::Display for Value {
    /// As TOML writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Count(n) => write!(f, "{n}"),
            Value::Text(t) => write!(f, "{}", toml::Value::String(t.clone())),
            Value::Path(p) => write!(f, "{}", toml::Value::String(p.display().to_string())),
            Value::List(items) => {
                let array: Vec<toml::Value> =
                    items.iter().map(|i| toml::Value::String(i.clone())).collect();
                write!(f, "{}", toml::Value::Array(array))
            }
        }
    }
}

/// A value as a layer gives it: typed in files and editor settings, text in the environment.
#[derive(Debug, Clone)]
pub(crate) enum Raw {
    /// From a file, the editor's settings or a flag.
    Toml(toml::Value),
    /// From an environment variable.
    Text(String),
}

impl std::fmt::Display for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Raw::Toml(v) => write!(f, "{v}"),
            Raw::Text(t) => write!(f, "{t:?}"),
        }
    }
}

impl Kind {
    /// Checks `raw` and returns its value (`None`: unset, an empty text, name or path); `base` is the folder
    /// relative paths are taken from. The error says what was expected.
    pub(crate) fn parse(&self, raw: &Raw, base: Option<&Path>) -> Result<Option<Value>, String> {
        let text = || match raw {
            Raw::Text(t) => Ok(t.clone()),
            Raw::Toml(toml::Value::String(s)) => Ok(s.clone()),
            Raw::Toml(other) => Err(format!("expected a string, found {}", other.type_str())),
        };
        match self {
            Kind::Bool => match raw {
                Raw::Toml(toml::Value::Boolean(b)) => Ok(Some(Value::Bool(*b))),
                Raw::Text(t) if t == "true" || t == "1" => Ok(Some(Value::Bool(true))),
                Raw::Text(t) if t == "false" || t == "0" => Ok(Some(Value::Bool(false))),
                other => Err(format!("expected true or false, found {other}")),
            },
            Kind::Count { min, max } => {
                let n = match raw {
                    Raw::Toml(toml::Value::Integer(n)) => u64::try_from(*n).ok(),
                    Raw::Text(t) => t.trim().parse::<u64>().ok(),
                    Raw::Toml(_) => None,
                };
                match n {
                    Some(n) if n >= *min => Ok(Some(Value::Count(n.min(*max)))),
                    _ => Err(format!("expected a whole number of at least {min}, found {raw}")),
                }
            }
            Kind::Text => {
                let t = text()?;
                Ok((!t.is_empty()).then_some(Value::Text(t)))
            }
            Kind::Choice { noun, values } => {
                let t = text()?;
                if values.contains(&t.as_str()) {
                    Ok(Some(Value::Text(t)))
                } else {
                    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                    Err(format!("{t:?} is not {noun}: use {}", or_list(&quoted)))
                }
            }
            Kind::Size => match raw {
                Raw::Toml(toml::Value::Integer(n)) if *n > 0 => Ok(Some(Value::Count(*n as u64))),
                Raw::Toml(toml::Value::String(s)) => {
                    sift_indexer::config::parse_size(s).map(|n| Some(Value::Count(n)))
                }
                Raw::Text(t) => sift_indexer::config::parse_size(t).map(|n| Some(Value::Count(n))),
                Raw::Toml(other) => Err(format!(
                    "expected a positive number of bytes or a size such as \"2 MiB\", found {other}"
                )),
            },
            Kind::Path => {
                let t = text()?;
                if t.is_empty() {
                    return Ok(None);
                }
                let path = PathBuf::from(t);
                Ok(Some(Value::Path(match base {
                    Some(base) if path.is_relative() => base.join(path),
                    _ => path,
                })))
            }
            Kind::Url => {
                let t = text()?;
                let url = t.trim();
                if url.starts_with("http://") || url.starts_with("https://") {
                    Ok(Some(Value::Text(url.trim_end_matches('/').to_owned())))
                } else {
                    Err(format!(
                        "{url:?} is not an http:// or https:// URL (for example http://127.0.0.1:8080/v1)"
                    ))
                }
            }
            Kind::List { item } => match raw {
                Raw::Toml(toml::Value::Array(items)) => items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => Ok(s.trim().to_owned()),
                        other => Err(format!(
                            "expected a list of strings ({item} each), found {} in it",
                            other.type_str()
                        )),
                    })
                    .filter(|i| !matches!(i, Ok(s) if s.is_empty()))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|v| Some(Value::List(v))),
                Raw::Text(t) => Ok(Some(Value::List(
                    t.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                ))),
                Raw::Toml(other) => Err(format!(
                    "expected a list of strings ({item} each), such as [\"a\", \"b\"], found {}",
                    other.type_str()
                )),
            },
            Kind::EnvName => {
                let t = text()?;
                if t.is_empty() {
                    return Ok(None);
                }
                let mut chars = t.chars();
                let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
                if valid {
                    return Ok(Some(Value::Text(t)));
                }
                // A `$NAME` is a reference, safe to echo; anything else may be the key itself.
                let shown = if t.starts_with('$') { format!("{t:?} ") } else { String::new() };
                Err(format!(
                    "{shown}is not an environment variable's name (write OPENAI_API_KEY, not the key or $OPENAI_API_KEY)"
                ))
            }
        }
    }

    /// The JSON types of the kind's values (JSON Schema's `type`).
    pub(crate) fn json_types(&self) -> &'static [&'static str] {
        match self {
            Kind::Bool => &["boolean"],
            Kind::Count { .. } => &["integer"],
            Kind::Size => &["integer", "string"],
            Kind::Text | Kind::Choice { .. } | Kind::Path | Kind::Url | Kind::EnvName => {
                &["string"]
            }
            Kind::List { .. } => &["array"],
        }
    }

    /// What values the kind takes, in words (`sift config schema` lists it).
    pub fn describe(&self) -> String {
        match self {
            Kind::Bool => "true or false".into(),
            Kind::Count { min, max } if *max == u64::MAX => format!("a whole number >= {min}"),
            Kind::Count { min, max } => format!("a whole number from {min} (at most {max})"),
            Kind::Text => "text".into(),
            Kind::Choice { values, .. } => {
                let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                or_list(&quoted)
            }
            Kind::Size => "a size (bytes, or \"2 MiB\")".into(),
            Kind::Path => "a path".into(),
            Kind::Url => "an http(s) URL".into(),
            Kind::EnvName => "an environment variable's name".into(),
            Kind::List { item } => format!("a list of strings ({item} each)"),
        }
    }
}

impl Key {
    /// The default value (`None`: unset).
    pub(crate) fn default_value(&self) -> Option<Value> {
        match &self.default {
            Default::Unset => None,
            Default::Bool(b) => Some(Value::Bool(*b)),
            Default::Count(n) => Some(Value::Count(*n)),
            Default::Text(t) => self.kind.parse(&Raw::Text((*t).to_owned()), None).ok().flatten(),
            Default::List(items) => {
                Some(Value::List(items.iter().map(|i| (*i).to_owned()).collect()))
            }
            Default::Computed { value, .. } => Some(value()),
        }
    }
}

/// `"a", "b" or "c"`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
