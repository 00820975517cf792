//! Training a static model on a repository (`sift model tune`): the token table of a static
//! model ([`Table`], in f32), fitted so that each training text's pooled vector points where a
//! teacher (the transformer) puts the same text, or where a commit's changed code is.
//!
//! The student is the static model's own pooling: a text's vector is the normalised sum of its
//! distinct tokens' rows, each scaled by the square root of its count. The loss of one example
//! is `1 - cos(s, y)` with `y` its (unit) target; with `u` the unnormalised sum and `s = u/|u|`,
//! `dL/du = -(y - (s·y) s) / |u|`, and each row's gradient is its weight times that. Rows are
//! updated by Adam, lazily: only the rows a batch touched, each with its own step count. No
//! autodiff is needed, and the state is the table (vocabulary × dimensions f32) and the moments
//! of the rows training touches.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use tokenizers::Tokenizer;

use super::ModelError;
use super::transformer::load_tokenizer;

use super::static_model::MAGIC;

/// A static model's table, in f32, with its tokenizer.
#[derive(Clone)]
pub struct Table {
    /// Vocabulary size.
    pub vocab: usize,
    /// Dimensions.
    pub dim: usize,
    /// `vocab × dim`, row-major (a row of a skipped token is zeros).
    pub rows: Vec<f32>,
    /// Tokens the model skips (a scale of 0 in the file: special and unused tokens); never
    /// trained.
    pub skip: Vec<bool>,
    tokenizer: Tokenizer,
}

/// One training text: its tokens with their pooling weights, and where it should point.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// (token, √count), tokens the table skips left out.
    pub tokens: Vec<(u32, f32)>,
    /// The target direction (unit length).
    pub target: Vec<f32>,
    /// The example's weight in the loss.
    pub weight: f32,
}

/// How [`train`] trains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainOptions {
    /// Passes over the examples.
    pub epochs: usize,
    /// Examples per update.
    pub batch: usize,
    /// The learning rate, as a fraction of the table's root-mean-square entry.
    pub lr: f32,
    /// The seed of the shuffle.
    pub seed: u64,
}

impl Default for TrainOptions {
    /// Five epochs of 512, learning rate 0.05 × RMS: chosen on the tuning half of Django's
    /// questions (more epochs fit the chunks better and the questions worse: 20 epochs fell
    /// from 0.66 to 0.54 R@5).
    fn default() -> Self {
        TrainOptions { epochs: 5, batch: 512, lr: 0.05, seed: 11 }
    }
}

/// What [`train`] did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Trained {
    /// Mean cosine of the examples to their targets before training.
    pub cosine_before: f32,
    /// After.
    pub cosine_after: f32,
    /// Rows updated.
    pub rows_touched: usize,
}

impl Table {
    /// Reads the static model in `dir` (`embeddings.bin`, `tokenizer.json`).
    pub fn load(dir: &Path) -> Result<Table, ModelError> {
        let (vocab, dim, bytes) = super::static_model::read_table(dir)?;
        let row = 4 + dim;
        let mut rows = Vec::with_capacity(vocab * dim);
        let mut skip = Vec::with_capacity(vocab);
        for r in bytes[16..].chunks_exact(row) {
            let scale = f32::from_le_bytes(r[..4].try_into().expect("4 bytes"));
            skip.push(scale == 0.0);
            rows.extend(r[4..].iter().map(|&b| scale * f32::from(b as i8)));
        }
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"), None)?;
        Ok(Table { vocab, dim, rows, skip, tokenizer })
    }

    /// `text`'s tokens and pooling weights, as the static model pools them.
    pub fn tokens(&self, text: &str) -> Vec<(u32, f32)> {
        let Ok(enc) = self.tokenizer.encode(text, false) else { return Vec::new() };
        let mut ids: Vec<u32> = enc.get_ids().to_vec();
        ids.sort_unstable();
        ids.chunk_by(|a, b| a == b)
            .filter(|g| !self.skip.get(g[0] as usize).copied().unwrap_or(true))
            .map(|g| (g[0], (g.len() as f32).sqrt()))
            .collect()
    }

    /// The pooled, unnormalised vector of `tokens`.
    fn pool(&self, tokens: &[(u32, f32)]) -> Vec<f32> {
        let mut u = vec![0f32; self.dim];
        for &(id, w) in tokens {
            let row = &self.rows[id as usize * self.dim..(id as usize + 1) * self.dim];
            for (acc, &x) in u.iter_mut().zip(row) {
                *acc += w * x;
            }
        }
        u
    }

    /// The unit vector of `tokens` (zeros when they have none).
    pub fn embed_tokens(&self, tokens: &[(u32, f32)]) -> Vec<f32> {
        let mut u = self.pool(tokens);
        let n = norm(&u);
        if n > 0.0 {
            u.iter_mut().for_each(|x| *x /= n);
        }
        u
    }

    /// Writes the table as a static model's `embeddings.bin` in `dir` (int8 rows with a scale
    /// each, as sift's static models are stored).
    pub fn write(&self, dir: &Path) -> Result<(), ModelError> {
        let mut file = Vec::with_capacity(16 + self.vocab * (4 + self.dim));
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&(self.vocab as u32).to_le_bytes());
        file.extend_from_slice(&(self.dim as u32).to_le_bytes());
        for id in 0..self.vocab {
            let row = &self.rows[id * self.dim..(id + 1) * self.dim];
            let max = row.iter().fold(0f32, |a, x| a.max(x.abs()));
            let scale = if self.skip[id] || max == 0.0 { 0.0 } else { max / 127.0 };
            file.extend_from_slice(&scale.to_le_bytes());
            for &x in row {
                let q =
                    if scale > 0.0 { (x / scale).round().clamp(-127.0, 127.0) as i8 } else { 0 };
                file.push(q as u8);
            }
        }
        let path = dir.join("embeddings.bin");
        let mut f = std::fs::File::create(&path)
            .map_err(|e| ModelError::Install(format!("cannot create {}: {e}", path.display())))?;
        f.write_all(&file)
            .and_then(|()| f.sync_all())
            .map_err(|e| ModelError::Install(format!("cannot write {}: {e}", path.display())))
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A small deterministic generator for the shuffle (xorshift64*).
struct Shuffle(u64);

impl Shuffle {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The mean cosine of `examples` to their targets under `table`.
pub fn mean_cosine(table: &Table, examples: &[Example]) -> f32 {
    if examples.is_empty() {
        return 0.0;
    }
    let sum: f32 = examples.iter().map(|e| dot(&table.embed_tokens(&e.tokens), &e.target)).sum();
    sum / examples.len() as f32
}

/// Fits `table` to `examples` (see the module doc). `progress(done, total)` after each batch,
/// over all epochs.
pub fn train(
    table: &mut Table,
    examples: &[Example],
    options: &TrainOptions,
    progress: &dyn Fn(usize, usize),
) -> Trained {
    let dim = table.dim;
    let live: Vec<f32> = table
        .rows
        .chunks_exact(dim)
        .zip(&table.skip)
        .filter(|(_, s)| !**s)
        .flat_map(|(r, _)| r.iter().copied())
        .collect();
    let rms = (live.iter().map(|x| x * x).sum::<f32>() / live.len().max(1) as f32).sqrt();
    let lr = options.lr * rms.max(1e-6);
    let (beta1, beta2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    // Adam's moments and step count for the rows touched so far.
    let mut slot: HashMap<u32, usize> = HashMap::new();
    let mut m: Vec<f32> = Vec::new();
    let mut v: Vec<f32> = Vec::new();
    let mut steps: Vec<i32> = Vec::new();
    let before = mean_cosine(table, examples);
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut rng = Shuffle(options.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let batch = options.batch.max(1);
    let total = options.epochs * examples.len().div_ceil(batch);
    let mut done = 0;
    for _ in 0..options.epochs {
        rng.shuffle(&mut order);
        for group in order.chunks(batch) {
            let mut grads: HashMap<u32, Vec<f32>> = HashMap::new();
            for &i in group {
                let e = &examples[i];
                let u = table.pool(&e.tokens);
                let n = norm(&u);
                if n == 0.0 {
                    continue;
                }
                let s: Vec<f32> = u.iter().map(|x| x / n).collect();
                let cos = dot(&s, &e.target);
                // dL/du, scaled by the example's weight and the batch's size.
                let scale = e.weight / (n * group.len() as f32);
                let du: Vec<f32> =
                    e.target.iter().zip(&s).map(|(y, si)| -(y - cos * si) * scale).collect();
                for &(id, w) in &e.tokens {
                    let g = grads.entry(id).or_insert_with(|| vec![0f32; dim]);
                    for (gi, d) in g.iter_mut().zip(&du) {
                        *gi += w * d;
                    }
                }
            }
            for (id, g) in grads {
                let k = *slot.entry(id).or_insert_with(|| {
                    m.extend(std::iter::repeat_n(0f32, dim));
                    v.extend(std::iter::repeat_n(0f32, dim));
                    steps.push(0);
                    steps.len() - 1
                });
                steps[k] += 1;
                let t = steps[k];
                let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                let row = &mut table.rows[id as usize * dim..(id as usize + 1) * dim];
                let (mk, vk) = (&mut m[k * dim..(k + 1) * dim], &mut v[k * dim..(k + 1) * dim]);
                for j in 0..dim {
                    mk[j] = beta1 * mk[j] + (1.0 - beta1) * g[j];
                    vk[j] = beta2 * vk[j] + (1.0 - beta2) * g[j] * g[j];
                    row[j] -= lr * (mk[j] / c1) / ((vk[j] / c2).sqrt() + eps);
                }
            }
            done += 1;
            progress(done, total);
        }
    }
    Trained {
        cosine_before: before,
        cosine_after: mean_cosine(table, examples),
        rows_touched: slot.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of four tokens in three dimensions, without a tokenizer file.
    fn table() -> Table {
        let json = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"WordLevel","vocab":{"[PAD]":0,"a":1,"b":2,"c":3},
            "unk_token":"[PAD]"}}"#;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), json).unwrap();
        let tokenizer = load_tokenizer(&dir.path().join("tokenizer.json"), None).unwrap();
        Table {
            vocab: 4,
            dim: 3,
            rows: vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            skip: vec![true, false, false, false],
            tokenizer,
        }
    }

    #[test]
    fn training_moves_the_pooled_vectors_toward_their_targets_and_leaves_skipped_rows() {
        let mut t = table();
        let unit = |v: [f32; 3]| {
            let n = norm(&v);
            v.iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let examples = vec![
            Example { tokens: t.tokens("a b"), target: unit([0.0, 0.0, 1.0]), weight: 1.0 },
            Example { tokens: t.tokens("a"), target: unit([0.0, 1.0, 1.0]), weight: 1.0 },
        ];
        assert_eq!(examples[0].tokens, vec![(1, 1.0), (2, 1.0)]);
        let options = TrainOptions { epochs: 200, batch: 2, lr: 0.05, seed: 1 };
        let done = train(&mut t, &examples, &options, &|_, _| {});
        assert!(done.cosine_after > done.cosine_before + 0.3, "{done:?}");
        assert!(done.cosine_after > 0.95, "{done:?}");
        assert_eq!(done.rows_touched, 2, "only the rows the texts use");
        assert_eq!(&t.rows[9..12], &[0.0, 0.0, 1.0], "an untouched row stays");
        assert_eq!(&t.rows[0..3], &[0.0, 0.0, 0.0], "a skipped token is never trained");
        // The same seed, the same table.
        let mut again = table();
        train(&mut again, &examples, &options, &|_, _| {});
        assert_eq!(again.rows, t.rows);
    }

    #[test]
    fn written_tables_read_back_within_int8_precision() {
        let mut t = table();
        t.rows[3] = 0.5;
        t.rows[4] = -0.25;
        let dir = tempfile::tempdir().unwrap();
        t.write(dir.path()).unwrap();
        t.tokenizer.save(dir.path().join("tokenizer.json"), false).unwrap();
        let back = Table::load(dir.path()).unwrap();
        assert_eq!(back.skip, t.skip);
        for (a, b) in back.rows.iter().zip(&t.rows) {
            assert!((a - b).abs() < 0.01, "{a} vs {b}");
        }
    }
}
