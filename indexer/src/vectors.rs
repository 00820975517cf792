//! The vector index beside tantivy: an append-only, crash-safe cache of int8 vectors keyed by
//! [`crate::embed::chunk_key`], and an in-memory matrix of the live chunks' vectors for exact
//! search.
//!
//! The lexical index says which chunks exist (each tantivy document carries its chunk key in a
//! fast field); the cache says which of those keys have a vector. So the vector index is never
//! out of step with the lexical one: a chunk without a vector is simply not yet embedded
//! (coverage below 100 %), and a vector whose chunk is gone is dead weight until compaction.
//!
//! On disk (`.sift/vectors/<model>.vec`): a header (magic, dimension, model id), then records of
//! `key: u64 LE`, `dim` int8 components and a 4-byte BLAKE3 check of both. Records are only ever
//! appended; a record torn by a crash fails its check and it and everything after it are
//! ignored (and cut off by the next writer). Vectors are stored as int8 with no scale: cosine
//! similarity does not need one, so storage is exactly a quarter of float32.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use tantivy::{DocAddress, Searcher};

use crate::error::{Error, Result};
use crate::layout::Layout;

pub use crate::layout::VECTORS;

const MAGIC: &[u8; 8] = b"SIFTVEC1";
const CHECK_LEN: usize = 4;

/// A model's vector cache: every vector it has computed for this repository, by chunk key.
pub struct VectorStore {
    path: PathBuf,
    model: String,
    dim: usize,
    /// All vectors, row after row.
    data: Vec<i8>,
    rows: HashMap<u64, u32>,
    keys: Vec<u64>,
    /// Byte length of the valid prefix of the file.
    valid_len: u64,
    /// The file's inode when it was loaded (0 where there is none), to notice a replacement.
    identity: u64,
    writer: Option<(File, File)>,
}

/// The file name of `model`'s cache: its id made file-name safe, plus a hash of the exact id.
fn file_stem(model: &str) -> String {
    let safe: String = model
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .take(60)
        .collect();
    let hash = blake3::hash(model.as_bytes());
    format!("{safe}-{}", &hash.to_hex()[..8])
}

fn header(model: &str, dim: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(16 + model.len());
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&(dim as u32).to_le_bytes());
    h.extend_from_slice(&(model.len() as u32).to_le_bytes());
    h.extend_from_slice(model.as_bytes());
    h
}

fn check(record: &[u8]) -> [u8; CHECK_LEN] {
    let hash = blake3::hash(record);
    let mut out = [0u8; CHECK_LEN];
    out.copy_from_slice(&hash.as_bytes()[..CHECK_LEN]);
    out
}

/// Quantises a vector to int8 with its own scale (its largest component maps to ±127).
pub fn quantize(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return vec![0; v.len()];
    }
    let scale = 127.0 / max;
    v.iter().map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8).collect()
}

impl VectorStore {
    /// Where the vectors of `model` live for `layout`'s repository.
    pub fn path_for(layout: &Layout, model: &str) -> PathBuf {
        layout.sift_dir.join(VECTORS.name).join(format!("{}.vec", file_stem(model)))
    }

    /// Opens (reading only) the cache of `model`; empty when there is none yet.
    pub fn open(layout: &Layout, model: &str, dim: usize) -> Result<VectorStore> {
        let path = Self::path_for(layout, model);
        let mut store = VectorStore {
            path,
            model: model.to_string(),
            dim,
            data: Vec::new(),
            rows: HashMap::new(),
            keys: Vec::new(),
            valid_len: 0,
            identity: 0,
            writer: None,
        };
        store.load()?;
        Ok(store)
    }

    fn record_len(&self) -> usize {
        8 + self.dim + CHECK_LEN
    }

    fn load(&mut self) -> Result<()> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(|e| Error::io("read", &self.path, e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("open", &self.path, e)),
        }
        self.identity = file_identity(&self.path).map_or(0, |(_, id)| id);
        let head = header(&self.model, self.dim);
        if bytes.len() < head.len() || bytes[..head.len()] != head[..] {
            // A torn header (crash while creating) or another model's file under a colliding
            // name: nothing in it is usable. The next writer starts it afresh.
            return Ok(());
        }
        let rec = self.record_len();
        let mut at = head.len();
        self.valid_len = at as u64;
        while at + rec <= bytes.len() {
            let record = &bytes[at..at + rec];
            let (body, sum) = record.split_at(8 + self.dim);
            if check(body) != sum {
                break;
            }
            let key = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
            self.push(key, body[8..].iter().map(|&b| b as i8));
            at += rec;
            self.valid_len = at as u64;
        }
        Ok(())
    }

    fn push(&mut self, key: u64, v: impl Iterator<Item = i8>) {
        if let Some(&row) = self.rows.get(&key) {
            // Same key, same text: keep the first (they are equal for a deterministic model),
            // unless the first is a left-out marker and this one a vector: the chunk was left
            // out of an upgrade and embedded later by the same model as the main one.
            let at = row as usize * self.dim..(row as usize + 1) * self.dim;
            let v: Vec<i8> = v.collect();
            if is_left_out(&self.data[at.clone()]) && !is_left_out(&v) {
                self.data[at].copy_from_slice(&v);
            }
            return;
        }
        let row = self.keys.len() as u32;
        self.rows.insert(key, row);
        self.keys.push(key);
        self.data.extend(v);
    }

    /// The model these vectors belong to.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of cached vectors.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no vector is cached.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The cached vector of `key`.
    pub fn get(&self, key: u64) -> Option<&[i8]> {
        let row = *self.rows.get(&key)? as usize;
        Some(&self.data[row * self.dim..(row + 1) * self.dim])
    }

    /// True when `key` has a vector (or a left-out marker: see [`VectorStore::leave_out`]).
    pub fn contains(&self, key: u64) -> bool {
        self.rows.contains_key(&key)
    }

    /// True when `key` has a left-out marker instead of a vector.
    pub fn is_left_out(&self, key: u64) -> bool {
        self.get(key).is_some_and(is_left_out)
    }

    /// Takes the cache's writer lock, cuts a torn tail off and readies appends. Fails with
    /// [`Error::Locked`] when another process is writing vectors for this model.
    pub fn lock_for_writing(&mut self) -> Result<()> {
        if self.writer.is_some() {
            return Ok(());
        }
        let dir = self.path.parent().expect("has a parent").to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
        let lock_path = self.path.with_extension("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io("open", &lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::VectorsLocked { path: lock_path });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &lock_path, e)),
        }
        // Another process may have appended (or compacted) since we loaded: read again under the
        // lock, unless the file is still exactly what we loaded (the common case in a server,
        // which locks once per embedding pass).
        let now = file_identity(&self.path);
        if self.valid_len == 0 || now != Some((self.valid_len, self.identity)) {
            self.reload()?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| Error::io("open", &self.path, e))?;
        if self.valid_len == 0 {
            file.set_len(0).map_err(|e| Error::io("truncate", &self.path, e))?;
            file.write_all(&header(&self.model, self.dim))
                .map_err(|e| Error::io("write", &self.path, e))?;
            self.valid_len = header(&self.model, self.dim).len() as u64;
            self.identity = file_identity(&self.path).map_or(0, |(_, id)| id);
        } else {
            file.set_len(self.valid_len).map_err(|e| Error::io("truncate", &self.path, e))?;
        }
        use std::io::Seek;
        file.seek(std::io::SeekFrom::End(0)).map_err(|e| Error::io("seek", &self.path, e))?;
        self.writer = Some((file, lock));
        Ok(())
    }

    /// Releases the writer lock (the vectors stay loaded).
    pub fn unlock(&mut self) {
        self.writer = None;
    }

    /// Reads vectors other processes appended since this store was loaded.
    pub fn refresh(&mut self) -> Result<()> {
        if self.writer.is_some() {
            return Ok(()); // nobody else can append while we hold the lock
        }
        self.reload()
    }

    /// Forgets what is loaded and reads the file again.
    fn reload(&mut self) -> Result<()> {
        self.data.clear();
        self.rows.clear();
        self.keys.clear();
        self.valid_len = 0;
        self.load()
    }

    /// Marks these chunks as left out on purpose by this model (an all-zero vector): they
    /// count as covered, and no search ranks them by this model. Needs
    /// [`VectorStore::lock_for_writing`] first.
    pub fn leave_out(&mut self, keys: &[u64]) -> Result<()> {
        let zero = vec![0f32; self.dim];
        let items: Vec<(u64, Vec<f32>)> = keys.iter().map(|&k| (k, zero.clone())).collect();
        self.append(&items)
    }

    /// Appends vectors (quantised to int8) and makes them durable. Keys already present are
    /// skipped. Needs [`VectorStore::lock_for_writing`] first.
    pub fn append(&mut self, items: &[(u64, Vec<f32>)]) -> Result<()> {
        let rec = self.record_len();
        let mut buf = Vec::with_capacity(items.len() * rec);
        let mut fresh = Vec::with_capacity(items.len());
        for (key, v) in items {
            if v.len() != self.dim {
                return Err(Error::Embedding(format!(
                    "the model gave a vector of {} numbers; {} expected",
                    v.len(),
                    self.dim
                )));
            }
            let q = quantize(v);
            // A vector replaces a left-out marker; nothing else is replaced.
            let replaces = self.is_left_out(*key) && !is_left_out(&q);
            if (self.contains(*key) && !replaces) || fresh.iter().any(|(k, _)| k == key) {
                continue;
            }
            let start = buf.len();
            buf.extend_from_slice(&key.to_le_bytes());
            buf.extend(q.iter().map(|&x| x as u8));
            let sum = check(&buf[start..]);
            buf.extend_from_slice(&sum);
            fresh.push((*key, q));
        }
        let (file, _) = self.writer.as_mut().ok_or_else(|| {
            Error::Embedding("internal: vectors appended without the writer lock".into())
        })?;
        file.write_all(&buf).map_err(|e| disk_error(&self.path, e))?;
        file.sync_data().map_err(|e| disk_error(&self.path, e))?;
        self.valid_len += buf.len() as u64;
        for (key, q) in fresh {
            self.push(key, q.into_iter());
        }
        Ok(())
    }

    /// Rewrites the cache keeping only `live` keys, when dead vectors outnumber live ones (after
    /// many edits). Atomic: readers see the old file or the new one. Needs the writer lock.
    pub fn compact_if_worthwhile(&mut self, live: &dyn Fn(u64) -> bool) -> Result<bool> {
        let alive = self.keys.iter().filter(|&&k| live(k)).count();
        let dead = self.keys.len() - alive;
        if dead < 4096 || dead < alive {
            return Ok(false);
        }
        let rec = self.record_len();
        let mut buf = header(&self.model, self.dim);
        buf.reserve(alive * rec);
        let (mut data, mut rows, mut keys) = (Vec::new(), HashMap::new(), Vec::new());
        for (row, &key) in self.keys.iter().enumerate() {
            if !live(key) {
                continue;
            }
            let v = &self.data[row * self.dim..(row + 1) * self.dim];
            let start = buf.len();
            buf.extend_from_slice(&key.to_le_bytes());
            buf.extend(v.iter().map(|&x| x as u8));
            let sum = check(&buf[start..]);
            buf.extend_from_slice(&sum);
            rows.insert(key, keys.len() as u32);
            keys.push(key);
            data.extend_from_slice(v);
        }
        crate::store::write_atomic(&self.path, &buf)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| Error::io("open", &self.path, e))?;
        use std::io::Seek;
        file.seek(std::io::SeekFrom::End(0)).map_err(|e| Error::io("seek", &self.path, e))?;
        if let Some((old, _)) = self.writer.as_mut() {
            *old = file;
        }
        self.valid_len = buf.len() as u64;
        self.identity = file_identity(&self.path).map_or(0, |(_, id)| id);
        (self.data, self.rows, self.keys) = (data, rows, keys);
        Ok(true)
    }
}

/// The length and inode of a file (inode 0 where the platform has none).
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let id = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let id = 0;
    Some((meta.len(), id))
}

fn disk_error(path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(28) {
        Error::DiskFull { path: path.to_path_buf() }
    } else {
        Error::io("write", path, e)
    }
}

/// The live chunks' vectors, as one matrix, for exact search at one tantivy searcher's state.
pub struct VectorIndex {
    searcher: Searcher,
    dim: usize,
    data: Vec<i8>,
    inv_norms: Vec<f32>,
    addrs: Vec<DocAddress>,
    /// Row of each chunk key (chunks with the same key have the same vector).
    rows_by_key: HashMap<u64, u32>,
    total: u64,
    /// Chunks the model leaves out on purpose (see [`VectorStore::leave_out`]).
    left_out: u64,
}

/// A query's cosine similarity to every chunk of a [`VectorIndex`]: the ranking, and the
/// similarity of any chunk (to score a lexical hit that the semantic ranking's head left out).
pub struct Similarities<'a> {
    index: &'a VectorIndex,
    scores: Vec<f32>,
}

impl Similarities<'_> {
    /// The searcher (index state) of the [`VectorIndex`]; the ranking's addresses are valid there.
    pub fn searcher(&self) -> &Searcher {
        &self.index.searcher
    }

    /// The `k` most similar chunks, best first.
    pub fn top(&self, k: usize) -> Vec<(f32, DocAddress)> {
        let mut scored: Vec<(f32, u32)> =
            self.scores.iter().enumerate().map(|(row, &s)| (s, row as u32)).collect();
        let by_score = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if k < scored.len() {
            scored.select_nth_unstable_by(k, by_score);
            scored.truncate(k);
        }
        scored.sort_unstable_by(by_score);
        scored.into_iter().map(|(score, row)| (score, self.index.addrs[row as usize])).collect()
    }

    /// The similarity of the chunk with this key, when it has a vector.
    pub fn of_key(&self, key: u64) -> Option<f32> {
        self.index.rows_by_key.get(&key).map(|&row| self.scores[row as usize])
    }

    /// The similarity below which a share `q` (0..=1) of all chunks fall. Estimated from at
    /// most 65,536 evenly spaced chunks on large indexes.
    pub fn quantile(&self, q: f32) -> f32 {
        if self.scores.is_empty() {
            return 0.0;
        }
        let step = self.scores.len().div_ceil(1 << 16);
        let mut sample: Vec<f32> = self.scores.iter().step_by(step).copied().collect();
        let i = ((sample.len() - 1) as f32 * q.clamp(0.0, 1.0)).round() as usize;
        *sample.select_nth_unstable_by(i, f32::total_cmp).1
    }
}

/// The chunk keys of every live document a searcher sees, with their addresses.
pub(crate) fn live_keys(searcher: &Searcher) -> Result<Vec<(u64, DocAddress)>> {
    let mut out = Vec::with_capacity(searcher.num_docs() as usize);
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let column = segment.fast_fields().u64("key").map_err(|e| Error::tantivy("<index>", e))?;
        for doc in segment.doc_ids_alive() {
            if let Some(key) = column.first(doc) {
                out.push((key, DocAddress::new(ord as u32, doc)));
            }
        }
    }
    Ok(out)
}

impl VectorIndex {
    /// Gathers the vectors of the chunks `searcher` sees from `store`. Chunks without a vector
    /// are counted (see [`VectorIndex::coverage`]) and left out.
    pub fn build(searcher: &Searcher, store: &VectorStore) -> Result<VectorIndex> {
        let live = live_keys(searcher)?;
        let dim = store.dim();
        let mut index = VectorIndex {
            searcher: searcher.clone(),
            dim,
            data: Vec::with_capacity(live.len() * dim),
            inv_norms: Vec::with_capacity(live.len()),
            addrs: Vec::with_capacity(live.len()),
            rows_by_key: HashMap::with_capacity(live.len()),
            total: live.len() as u64,
            left_out: 0,
        };
        for (key, addr) in live {
            if let Some(v) = store.get(key) {
                if is_left_out(v) {
                    index.left_out += 1;
                    continue;
                }
                let inv = inverse_norm(v);
                index.data.extend_from_slice(v);
                index.inv_norms.push(inv);
                index.rows_by_key.entry(key).or_insert(index.addrs.len() as u32);
                index.addrs.push(addr);
            }
        }
        Ok(index)
    }

    /// The searcher (index state) the matrix was built for; its addresses are valid there.
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// Number of chunks with a vector.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// True when no chunk has a vector.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// Whether the chunk with this key has a vector here.
    pub fn contains_key(&self, key: u64) -> bool {
        self.rows_by_key.contains_key(&key)
    }

    /// Chunks covered (with a vector, or left out on purpose by the model) and chunks in all.
    pub fn coverage(&self) -> (u64, u64) {
        (self.addrs.len() as u64 + self.left_out, self.total)
    }

    /// The `k` chunks most similar to `query` (cosine), best first.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(f32, DocAddress)> {
        if k == 0 {
            return Vec::new();
        }
        self.similarities(query).top(k)
    }

    /// The cosine similarity of `query` to every chunk (exact; one pass over the matrix). A
    /// query of another dimension is similar to nothing.
    pub fn similarities(&self, query: &[f32]) -> Similarities<'_> {
        if query.len() != self.dim || self.addrs.is_empty() {
            return Similarities { index: self, scores: Vec::new() };
        }
        let (q, qinv) = quantized_query(query);
        let scores: Vec<f32> = self
            .data
            .chunks_exact(self.dim)
            .zip(&self.inv_norms)
            .map(|(v, inv)| dot_i8(&q, v) as f32 * inv * qinv)
            .collect();
        Similarities { index: self, scores }
    }
}

/// A query quantised as the stored vectors are, with the inverse of its norm.
pub fn quantized_query(query: &[f32]) -> (Vec<i8>, f32) {
    let q = quantize(query);
    let inv = inverse_norm(&q);
    (q, inv)
}

/// Whether a stored vector is the mark of a chunk left out on purpose: no model's normalised
/// vector quantises to all zeros (its largest component becomes ±127).
fn is_left_out(v: &[i8]) -> bool {
    v.iter().all(|&x| x == 0)
}

/// 1 / |v| of an int8 vector (0 for the zero vector).
pub fn inverse_norm(v: &[i8]) -> f32 {
    let norm: i64 = v.iter().map(|&x| i64::from(x) * i64::from(x)).sum();
    if norm == 0 { 0.0 } else { 1.0 / (norm as f32).sqrt() }
}

/// Dot product of two int8 vectors, in a shape the compiler vectorises.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += i32::from(*x) * i32::from(*y);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(dir.path(), &[crate::STORE_ENTRIES]).unwrap();
        store.ensure().unwrap();
        (dir, Layout::new(&store))
    }

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn quantised_cosine_is_close_to_float_cosine() {
        let a = unit(&[0.3, -0.2, 0.9, 0.1, 0.05, -0.4, 0.0, 0.7]);
        let b = unit(&[0.25, -0.1, 0.8, 0.3, 0.0, -0.5, 0.1, 0.6]);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (qa, qb) = (quantize(&a), quantize(&b));
        let n = |v: &[i8]| (dot_i8(v, v) as f32).sqrt();
        let approx = dot_i8(&qa, &qb) as f32 / (n(&qa) * n(&qb));
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
    }

    #[test]
    fn dot_matches_the_naive_sum_for_any_length() {
        for len in [0, 1, 15, 16, 17, 384, 385] {
            let a: Vec<i8> = (0..len).map(|i| ((i * 37) % 255) as i8).collect();
            let b: Vec<i8> = (0..len).map(|i| ((i * 91 + 7) % 255) as i8).collect();
            let naive: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            assert_eq!(dot_i8(&a, &b), naive, "len {len}");
        }
    }

    #[test]
    fn appended_vectors_survive_reopening_and_a_torn_tail_is_dropped() {
        let (_dir, layout) = layout();
        let mut store = VectorStore::open(&layout, "m/1", 4).unwrap();
        assert!(store.is_empty());
        store.lock_for_writing().unwrap();
        store.append(&[(1, vec![1.0, 0.0, 0.0, 0.0]), (2, vec![0.0, 1.0, 0.0, 0.0])]).unwrap();
        store.append(&[(2, vec![0.0, 1.0, 0.0, 0.0]), (3, vec![0.0, 0.0, 1.0, 0.0])]).unwrap();
        assert_eq!(store.len(), 3);
        drop(store);

        // A crash in the middle of a record: half of one more record on disk.
        let path = VectorStore::path_for(&layout, "m/1");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[9, 0, 0, 0, 0, 0, 0, 0, 127]).unwrap();
        drop(f);

        let mut store = VectorStore::open(&layout, "m/1", 4).unwrap();
        assert_eq!(store.len(), 3);
        assert_eq!(store.get(3).unwrap(), &[0, 0, 127, 0]);
        assert!(store.get(9).is_none());
        store.lock_for_writing().unwrap();
        store.append(&[(4, vec![0.0, 0.0, 0.0, 1.0])]).unwrap();
        drop(store);
        let store = VectorStore::open(&layout, "m/1", 4).unwrap();
        assert_eq!(store.len(), 4, "the torn tail was cut before appending");
        assert_eq!(store.get(4).unwrap(), &[0, 0, 0, 127]);
    }

    #[test]
    fn a_corrupted_record_ends_the_valid_prefix() {
        let (_dir, layout) = layout();
        let mut store = VectorStore::open(&layout, "m", 4).unwrap();
        store.lock_for_writing().unwrap();
        store.append(&[(1, vec![1.0, 0.0, 0.0, 0.0]), (2, vec![0.0, 1.0, 0.0, 0.0])]).unwrap();
        drop(store);
        let path = VectorStore::path_for(&layout, "m");
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 6] ^= 0x55; // inside the second record's vector
        std::fs::write(&path, bytes).unwrap();
        let store = VectorStore::open(&layout, "m", 4).unwrap();
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn another_model_or_dimension_starts_empty() {
        let (_dir, layout) = layout();
        let mut store = VectorStore::open(&layout, "m", 4).unwrap();
        store.lock_for_writing().unwrap();
        store.append(&[(1, vec![1.0, 0.0, 0.0, 0.0])]).unwrap();
        drop(store);
        assert!(VectorStore::open(&layout, "other", 4).unwrap().is_empty());
        assert!(VectorStore::open(&layout, "m", 8).unwrap().is_empty());
    }

    #[test]
    fn a_writer_sees_what_another_appended_or_compacted_in_between() {
        let (_dir, layout) = layout();
        let mut a = VectorStore::open(&layout, "m", 4).unwrap();
        a.lock_for_writing().unwrap();
        a.append(&[(1, vec![1.0, 0.0, 0.0, 0.0])]).unwrap();
        a.unlock();
        let mut b = VectorStore::open(&layout, "m", 4).unwrap();
        b.lock_for_writing().unwrap();
        b.append(&[(2, vec![0.0, 1.0, 0.0, 0.0])]).unwrap();
        b.unlock();
        // `a` still holds only its own vector in memory; locking again reads b's.
        a.lock_for_writing().unwrap();
        assert!(a.contains(1) && a.contains(2));
        a.append(&[(3, vec![0.0, 0.0, 1.0, 0.0])]).unwrap();
        a.unlock();
        assert_eq!(VectorStore::open(&layout, "m", 4).unwrap().len(), 3);
    }

    #[test]
    fn one_writer_at_a_time() {
        let (_dir, layout) = layout();
        let mut a = VectorStore::open(&layout, "m", 4).unwrap();
        a.lock_for_writing().unwrap();
        let mut b = VectorStore::open(&layout, "m", 4).unwrap();
        assert!(matches!(b.lock_for_writing(), Err(Error::VectorsLocked { .. })));
        drop(a);
        b.lock_for_writing().unwrap();
    }

    #[test]
    fn compaction_keeps_live_vectors_only() {
        let (_dir, layout) = layout();
        let mut store = VectorStore::open(&layout, "m", 4).unwrap();
        store.lock_for_writing().unwrap();
        let items: Vec<(u64, Vec<f32>)> =
            (0..10_000u64).map(|k| (k, vec![1.0, k as f32, 0.0, 0.0])).collect();
        store.append(&items).unwrap();
        assert!(store.compact_if_worthwhile(&|k| k < 100).unwrap());
        assert_eq!(store.len(), 100);
        store.append(&[(20_000, vec![0.0, 0.0, 1.0, 0.0])]).unwrap();
        drop(store);
        let store = VectorStore::open(&layout, "m", 4).unwrap();
        assert_eq!(store.len(), 101);
        assert!(store.contains(99) && store.contains(20_000) && !store.contains(100));
    }
}
