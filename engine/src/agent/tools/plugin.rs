//! Agent tools that the team's WebAssembly plugins export (`tools.list-tools` and
//! `tools.call-tool` of `sift:plugin`): offered to the model beside sift's own, named
//! `plugin_<plugin>_<tool>`, and called under the plugin's limits and grants.
//!
//! Which plugins: the working tree's, as a review of uncommitted work finds them
//! (`.sift/plugins/*.wasm` and `[[review.plugins]]` of `.sift/config.toml`, with their grants and
//! limits). Nothing the model says reaches that list, the grants or the limits. A plugin's reads
//! go through the sandbox's [`Policy`] (`SandboxWorkspace`) and see the files on disk, not the
//! agent's pending edits. A plugin that cannot be loaded, or whose tools cannot be listed, is
//! left out and said so in [`PluginTools::problems`]; a failing call is a tool error.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use sift_plugins::{Plugin, Workspace};
use sift_runtime::llm::ToolSpec;
use sift_runtime::sandbox::Policy;

use super::ToolOutput;
use crate::review::plugins::{self, SandboxWorkspace};

/// The tool names a plugin tool may not take: sift's own.
fn builtin(name: &str) -> bool {
    super::specs().iter().any(|s| s.name == name)
}

/// One plugin tool as the model sees it, and what answers it.
struct PluginTool {
    spec: ToolSpec,
    plugin: Arc<Plugin>,
    tool: String,
}

/// The plugin tools of one workspace.
#[derive(Default)]
pub struct PluginTools {
    tools: Vec<PluginTool>,
    workspace: Option<Arc<dyn Workspace>>,
    /// Plugins (or tools) left out, one line each, naming the plugin and why.
    pub problems: Vec<String>,
}

impl std::fmt::Debug for PluginTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.spec.name.as_str()).collect();
        f.debug_struct("PluginTools")
            .field("tools", &names)
            .field("problems", &self.problems)
            .finish()
    }
}

impl PluginTools {
    /// The tools of the working tree's plugins at `root`, reading under `policy`.
    pub fn load(root: &Path, policy: &Policy) -> PluginTools {
        let mut out = PluginTools::default();
        let sources = match plugins::working_tree_sources(root) {
            Ok(sources) => sources,
            Err(e) => {
                out.problems.push(format!("plugins: {e}"));
                return out;
            }
        };
        if sources.is_empty() {
            return out;
        }
        let engine = match plugins::engine() {
            Ok(engine) => engine,
            Err(e) => {
                out.problems.push(e.to_string());
                return out;
            }
        };
        let workspace: Arc<dyn Workspace> = Arc::new(SandboxWorkspace::with_policy(policy.clone()));
        for source in sources {
            let name = source.entry.name();
            let plugin = match source.load(engine) {
                Ok(plugin) => Arc::new(plugin),
                Err(e) => {
                    out.problems.push(e);
                    continue;
                }
            };
            let listed = match plugin.tools(workspace.clone()) {
                Ok(listed) => listed.value,
                Err(e) => {
                    out.problems.push(e.to_string());
                    continue;
                }
            };
            for tool in listed {
                let spec_name = format!("plugin_{name}_{}", tool.name);
                let taken =
                    builtin(&spec_name) || out.tools.iter().any(|t| t.spec.name == spec_name);
                if spec_name.len() > 64 || taken {
                    out.problems.push(format!(
                        "plugin {name}: tool {:?} left out: {spec_name:?} is {}",
                        tool.name,
                        if taken { "taken" } else { "longer than 64 characters" }
                    ));
                    continue;
                }
                out.tools.push(PluginTool {
                    spec: ToolSpec {
                        name: spec_name,
                        description: format!("(plugin {name}) {}", tool.description),
                        parameters: tool.schema,
                    },
                    plugin: plugin.clone(),
                    tool: tool.name,
                });
            }
        }
        out.workspace = Some(workspace);
        out
    }

    /// The tools' specs, in the order the plugins and their lists give them.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|t| &t.spec)
    }

    /// Calls tool `name` with `args` (checked against its schema by the loop): `None` when no
    /// plugin offers it.
    pub fn call(&self, name: &str, args: &Value) -> Option<ToolOutput> {
        let tool = self.tools.iter().find(|t| t.spec.name == name)?;
        let workspace = self.workspace.clone()?;
        Some(match tool.plugin.call_tool(workspace, &tool.tool, args) {
            Ok(out) => ToolOutput::ok(out.value),
            Err(e) => ToolOutput::fail(e.to_string()),
        })
    }
}
