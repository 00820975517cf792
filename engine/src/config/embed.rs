//! `[embed]`: the embedding model (`sift_runtime::embed::EmbedConfig`).

use sift_runtime::embed::{DEFAULT_MODEL, DEFAULT_UPGRADE, EmbedConfig};

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[embed]` section's keys.
pub const SECTION: Section = Section {
    name: "embed",
    doc: "The embedding model that semantic and hybrid search use.",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[
        Key {
            name: "model",
            kind: Kind::Text,
            default: Default::Text(DEFAULT_MODEL),
            env: Some("SIFT_EMBED_MODEL"),
            in_files: true,
            doc: "A model in sift's model directory (\"all-minilm-l6-v2-static\"; \"all-minilm-l6-v2\", the transformer: better results, much slower to embed), or a model directory (a path with a /). Unset, the model `sift model tune` kept for the repository (.sift/models/tuned) serves when there is one.",
        },
        Key {
            name: "upgrade",
            kind: Kind::Text,
            default: Default::Text(DEFAULT_UPGRADE),
            env: Some("SIFT_EMBED_UPGRADE"),
            in_files: true,
            doc: "A better, slower model computed after `model` (by `sift index`, and in the background by the language server); searches use its vectors once they cover every chunk. \"none\": no upgrade.",
        },
        Key {
            name: "device",
            kind: Kind::Choice { noun: "a device", values: &["cpu", "cuda"] },
            default: Default::Text("cpu"),
            env: Some("SIFT_EMBED_DEVICE"),
            in_files: true,
            doc: "Where transformer models run; cuda needs onnxruntime-gpu and falls back to the CPU with a notice.",
        },
        Key {
            name: "threads",
            kind: Kind::Count { min: 0, max: u64::MAX },
            default: Default::Count(0),
            env: None,
            in_files: true,
            doc: "onnxruntime intra-op threads for transformer models (0: onnxruntime's choice).",
        },
        Key {
            name: "batch",
            // 0 counts as 1 where it is used (`embed_missing`), as it always did.
            kind: Kind::Count { min: 0, max: u64::MAX },
            default: Default::Unset,
            env: None,
            in_files: true,
            doc: "Texts per model call (unset: 256 for static models, 8 for transformers on the CPU, 32 on CUDA; 0 counts as 1).",
        },
        Key {
            name: "enabled",
            kind: Kind::Bool,
            default: Default::Bool(true),
            env: None,
            in_files: true,
            doc: "false turns embeddings off: lexical search only.",
        },
        Key {
            name: "onnxruntime",
            kind: Kind::Path,
            default: Default::Unset,
            env: Some("ORT_DYLIB_PATH"),
            in_files: true,
            doc: "The libonnxruntime.so to load (unset: sift's model directory, then an installed onnxruntime Python package).",
        },
    ],
};

impl Config {
    /// `[embed]`.
    ///
    /// While `model` is not set anywhere (its default), the model tuned on this repository
    /// (`.sift/models/tuned`, `sift model tune`) serves when there is one.
    pub fn embed(&self) -> Result<EmbedConfig, Invalid> {
        let mut embed = self.embed_untuned()?;
        let s = self.section(&SECTION)?;
        if s.source("model") == super::Source::Default
            && let Some(root) = &self.root
        {
            let tuned = crate::store::tuned_model_dir(root);
            if tuned.join("sift-model.toml").is_file() {
                embed.model = Some(tuned.display().to_string());
            }
        }
        Ok(embed)
    }

    /// `[embed]` as configured, whether or not a tuned model exists (the model
    /// `sift model tune` starts from).
    pub fn embed_untuned(&self) -> Result<EmbedConfig, Invalid> {
        let s = self.section(&SECTION)?;
        Ok(EmbedConfig {
            model: s.opt_text("model"),
            device: s.parsed("device")?,
            threads: s.count("threads") as usize,
            onnxruntime: s.opt_path("onnxruntime"),
            batch: s.opt_count("batch").map(|n| n as usize),
            enabled: s.bool("enabled"),
            upgrade: s.opt_text("upgrade").filter(|u| !u.is_empty() && u != "none"),
        })
    }
}
