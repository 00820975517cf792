//! One loaded plugin: its compiled component, pre-linked, its grants and limits. Every call gets
//! a fresh instance in a fresh store (no state survives a call, so a trap cannot leave a broken
//! instance behind) with the fuel, the deadline and the memory cap of its [`Limits`]; every
//! failure comes back as a [`PluginError`].

use std::sync::Arc;
use std::time::Instant;

use wasmtime::Store;
use wasmtime::component::Component;

use crate::bindings::exports::sift::plugin::checks;
use crate::bindings::{Plugin as World, PluginPre as WorldPre};
use crate::engine::{PluginEngine, TICK};
use crate::host::{HostState, LogLine, MemoryCap, MemoryCapHit, Workspace};
use crate::interface::Interface;
use crate::limits::{Grant, Limits};
use crate::{PluginError, Result};

/// A changed file, as a check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative, `/`-separated.
    pub path: String,
    /// sift's language name.
    pub language: String,
    /// The text before (`None`: a new file).
    pub old_text: Option<String>,
    /// The text after.
    pub new_text: String,
    /// The 1-based inclusive line ranges of `new_text` the change touched.
    pub changed: Vec<(u32, u32)>,
}

/// How bad a plugin's finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Worth a look.
    Info,
    /// Probably wrong.
    Warning,
    /// Wrong.
    Error,
}

/// A plugin's replacement of a byte range of the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// Start (byte offset, on a character boundary).
    pub start_byte: usize,
    /// End (exclusive).
    pub end_byte: usize,
    /// The new text.
    pub replacement: String,
}

/// A finding of a plugin, checked against the file: lines within it, columns 1-based, a fix on
/// character boundaries. The rule is the plugin's own id (the caller prefixes it).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginFinding {
    /// The plugin's rule id.
    pub rule: String,
    /// How bad.
    pub severity: Severity,
    /// 0 to 1.
    pub confidence: f32,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// First column, 1-based, in characters.
    pub start_col: usize,
    /// Column just past the end, 1-based.
    pub end_col: usize,
    /// What is wrong.
    pub message: String,
    /// Why.
    pub rationale: String,
    /// A fix, when the plugin knows one.
    pub fix: Option<Fix>,
}

/// An agent tool a plugin offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON schema (checked to be a JSON object).
    pub schema: serde_json::Value,
}

/// What a call returned, with what the plugin logged during it.
#[derive(Debug, Clone, PartialEq)]
pub struct Output<T> {
    /// The result.
    pub value: T,
    /// Its log lines.
    pub log: Vec<LogLine>,
}

/// A compiled, accepted plugin.
#[derive(Clone)]
pub struct Plugin {
    name: String,
    engine: PluginEngine,
    pre: WorldPre<HostState>,
    interface: Interface,
    limits: Limits,
    grants: Vec<Grant>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

/// Longest text fields a plugin may return (a rule id; a message or rationale).
const MAX_RULE_LEN: usize = 128;
const MAX_TEXT_LEN: usize = 8_000;

impl Plugin {
    /// Compiles (or loads from the cache) and links the component in `bytes`.
    pub fn load(
        engine: &PluginEngine,
        name: &str,
        bytes: &[u8],
        limits: Limits,
        grants: Vec<Grant>,
    ) -> Result<Plugin> {
        let (component, interface) = engine.compile(name, bytes)?;
        Plugin::from_component(engine, name, component, interface, limits, grants)
    }

    fn from_component(
        engine: &PluginEngine,
        name: &str,
        component: Component,
        interface: Interface,
        limits: Limits,
        grants: Vec<Grant>,
    ) -> Result<Plugin> {
        let load = |e: wasmtime::Error| PluginError::Load {
            name: name.into(),
            reason: format!(
                "its exports or imports do not match sift:plugin@{}: {e:#}",
                crate::INTERFACE_VERSION
            ),
        };
        let pre = engine.linker.instantiate_pre(&component).map_err(load)?;
        let pre = WorldPre::new(pre).map_err(load)?;
        Ok(Plugin { name: name.into(), engine: engine.clone(), pre, interface, limits, grants })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it imports and exports.
    pub fn interface(&self) -> &Interface {
        &self.interface
    }

    /// Its limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Its grants.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Runs its check on one changed file.
    pub fn check_file(
        &self,
        workspace: Arc<dyn Workspace>,
        file: &ChangedFile,
    ) -> Result<Output<Vec<PluginFinding>>> {
        let call = "check-file";
        let arg = checks::ChangedFile {
            path: file.path.clone(),
            language: file.language.clone(),
            old_text: file.old_text.clone(),
            new_text: file.new_text.clone(),
            changed: file
                .changed
                .iter()
                .map(|&(start, end)| checks::LineRange { start, end })
                .collect(),
        };
        let (answer, log) = self.call(workspace, call, |world, store| {
            world.sift_plugin_checks().call_check_file(store, &arg)
        })?;
        let found = answer.map_err(|message| self.reported(call, message))?;
        if found.len() > self.limits.max_findings {
            return Err(self.malformed(
                call,
                format!(
                    "{} findings, more than the {} allowed per file",
                    found.len(),
                    self.limits.max_findings
                ),
            ));
        }
        let findings = found
            .into_iter()
            .map(|f| validate(f, &file.new_text))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(|reason| self.malformed(call, reason))?;
        Ok(Output { value: findings, log })
    }

    /// The agent tools it offers.
    pub fn tools(&self, workspace: Arc<dyn Workspace>) -> Result<Output<Vec<Tool>>> {
        let call = "list-tools";
        let (listed, log) = self.call(workspace, call, |world, store| {
            world.sift_plugin_tools().call_list_tools(store)
        })?;
        let tools = listed
            .into_iter()
            .map(|t| {
                let ok_name = !t.name.is_empty()
                    && t.name.len() <= 64
                    && t.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !ok_name {
                    return Err(format!(
                        "tool name {:?}: use 1 to 64 letters, digits, - and _",
                        t.name
                    ));
                }
                let schema: serde_json::Value = serde_json::from_str(&t.schema)
                    .map_err(|e| format!("tool {}: its schema is not JSON: {e}", t.name))?;
                if !schema.is_object() {
                    return Err(format!("tool {}: its schema is not a JSON object", t.name));
                }
                Ok(Tool { name: t.name, description: t.description, schema })
            })
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(|reason| self.malformed(call, reason))?;
        Ok(Output { value: tools, log })
    }

    /// Calls one of its tools with JSON arguments.
    pub fn call_tool(
        &self,
        workspace: Arc<dyn Workspace>,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<Output<String>> {
        let call = "call-tool";
        let args = arguments.to_string();
        let (answer, log) = self.call(workspace, call, |world, store| {
            world.sift_plugin_tools().call_call_tool(store, tool, &args)
        })?;
        let text = answer.map_err(|message| self.reported(call, message))?;
        Ok(Output { value: text, log })
    }

    /// Instantiates it in a fresh store under its limits and runs `f`.
    fn call<T>(
        &self,
        workspace: Arc<dyn Workspace>,
        call: &str,
        f: impl FnOnce(&World, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<(T, Vec<LogLine>)> {
        let state = HostState {
            name: self.name.clone(),
            workspace,
            grants: self.grants.clone(),
            limits: self.limits.clone(),
            read_used: 0,
            log: Vec::new(),
            log_dropped: 0,
            memory: MemoryCap { cap: self.limits.memory_bytes },
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.memory);
        store.set_fuel(self.limits.fuel).map_err(|e| self.trap(call, e))?;
        // One tick more than the deadline's: the first tick may come at once.
        let ticks = self.limits.deadline.as_micros().div_ceil(TICK.as_micros()) as u64 + 1;
        let _running = self.engine.ticker.running();
        store.set_epoch_deadline(ticks);
        let started = Instant::now();
        let result = self.pre.instantiate(&mut store).and_then(|world| f(&world, &mut store));
        let elapsed = started.elapsed();
        let state = store.into_data();
        if state.log_dropped > 0 {
            tracing::warn!(plugin = %self.name, "{call}: dropped {} log lines past the limit of {}", state.log_dropped, self.limits.max_log_lines);
        }
        match result {
            Ok(value) => Ok((value, state.log)),
            Err(e) => {
                tracing::debug!(plugin = %self.name, "{call} failed after {elapsed:?}: {e:#}");
                Err(self.trap(call, e))
            }
        }
    }

    /// What a wasmtime error of a call is, as a plugin error.
    fn trap(&self, call: &str, e: wasmtime::Error) -> PluginError {
        let (name, call) = (self.name.clone(), call.to_string());
        if let Some(hit) = e.chain().find_map(|c| c.downcast_ref::<MemoryCapHit>()) {
            return PluginError::Memory { name, call, wanted: hit.wanted, cap: hit.cap };
        }
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::OutOfFuel) => {
                PluginError::Fuel { name, call, fuel: self.limits.fuel }
            }
            Some(wasmtime::Trap::Interrupt) => {
                PluginError::Deadline { name, call, deadline: self.limits.deadline }
            }
            _ => PluginError::Trap { name, call, reason: format!("{e:#}") },
        }
    }

    fn malformed(&self, call: &str, reason: String) -> PluginError {
        PluginError::Malformed { name: self.name.clone(), call: call.into(), reason }
    }

    fn reported(&self, call: &str, mut message: String) -> PluginError {
        if message.len() > MAX_TEXT_LEN {
            let mut end = MAX_TEXT_LEN;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        PluginError::Reported { name: self.name.clone(), call: call.into(), message }
    }
}

/// A finding checked against the text it is about.
fn validate(f: checks::Finding, text: &str) -> std::result::Result<PluginFinding, String> {
    let what = format!("finding {:?} at {}:{}", f.rule, f.start_line, f.start_col);
    let ok_rule = !f.rule.is_empty()
        && f.rule.len() <= MAX_RULE_LEN
        && f.rule.chars().all(|c| c.is_ascii_alphanumeric() || "-_/.".contains(c));
    if !ok_rule {
        return Err(format!(
            "{what}: a rule id is 1 to {MAX_RULE_LEN} letters, digits, -, _, / and ."
        ));
    }
    if f.message.trim().is_empty()
        || f.message.len() > MAX_TEXT_LEN
        || f.rationale.len() > MAX_TEXT_LEN
    {
        return Err(format!(
            "{what}: the message must be 1 to {MAX_TEXT_LEN} bytes, the rationale at most {MAX_TEXT_LEN}"
        ));
    }
    if !(0.0..=1.0).contains(&f.confidence) {
        return Err(format!("{what}: confidence {} is not between 0 and 1", f.confidence));
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let (start_line, end_line) = (f.start_line as usize, f.end_line as usize);
    if start_line == 0 || start_line > end_line || end_line > lines.len() {
        return Err(format!(
            "{what}: lines {start_line}..={end_line} are not within the file's {} lines",
            lines.len()
        ));
    }
    let width = |line: usize| lines[line - 1].trim_end_matches('\r').chars().count();
    let (start_col, end_col) = (f.start_col as usize, f.end_col as usize);
    if start_col == 0
        || start_col > width(start_line) + 1
        || end_col == 0
        || end_col > width(end_line) + 1
        || (start_line == end_line && end_col < start_col)
    {
        return Err(format!("{what}: columns {start_col}..{end_col} are not within its lines"));
    }
    let fix = match f.fix {
        None => None,
        Some(fix) => {
            let (s, e) = (fix.start_byte as usize, fix.end_byte as usize);
            if s > e || e > text.len() || !text.is_char_boundary(s) || !text.is_char_boundary(e) {
                return Err(format!(
                    "{what}: its fix's bytes {s}..{e} are not a range of the file on character boundaries"
                ));
            }
            Some(Fix { start_byte: s, end_byte: e, replacement: fix.replacement })
        }
    };
    Ok(PluginFinding {
        rule: f.rule,
        severity: match f.severity {
            checks::Severity::Info => Severity::Info,
            checks::Severity::Warning => Severity::Warning,
            checks::Severity::Error => Severity::Error,
        },
        confidence: f.confidence,
        start_line,
        end_line,
        start_col,
        end_col,
        message: f.message,
        rationale: f.rationale,
        fix,
    })
}
