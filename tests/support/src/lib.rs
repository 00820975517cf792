//! Fixtures that sift's tests share and the shipped binary never contains: only test targets
//! depend on this crate (dev-dependencies, and the end-to-end `tests/` crate).

pub mod github;
pub mod guard;
pub mod openai;
pub mod plugins;

use sift_indexer::{EmbedError, Embedder, TextKind};

/// A deterministic bag-of-words embedder: each word adds one to a dimension picked by its hash
/// (64 dimensions), so texts sharing words are similar. For tests of semantic and hybrid search
/// on real indexes without a model.
pub struct WordsEmbedder;

impl Embedder for WordsEmbedder {
    fn id(&self) -> &str {
        "test-words"
    }
    fn dim(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str], _: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                for w in t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    let h =
                        w.to_lowercase().bytes().fold(7u32, |h, b| h.wrapping_mul(31) ^ b as u32);
                    v[h as usize % 64] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}
