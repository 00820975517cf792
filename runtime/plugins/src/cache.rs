//! Compiled plugins, kept so that a review does not recompile them: one file per component and
//! wasmtime build, in the user's cache folder (`$XDG_CACHE_HOME/sift/plugins` or
//! `~/.cache/sift/plugins`).
//!
//! Compiled code is native code, and loading it is `unsafe` in wasmtime
//! ([`Component::deserialize`]): whoever can write a cache file can run code in sift. That
//! is why the cache is **never** in the repository (`.sift/` is controlled by whoever sends a
//! pull request) but in a folder of the user's own, and why a cache file is used only when it
//! and its folder belong to the user running sift and nobody else may write them. Under those
//! conditions, someone who can write the cache can already run code as this user, so trusting
//! it gives nothing away. Files are written to a temporary name and renamed, so a crash leaves
//! no half-written file, and they are keyed by the component's BLAKE3 hash and wasmtime's
//! compatibility hash (wasmtime checks the latter again when loading).

#![allow(unsafe_code)]

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// A folder of compiled components.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A cache in `dir` (created, mode 0700, when first written).
    pub fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    /// The user's cache folder for plugins, when the environment names one.
    pub fn user_dir() -> Option<PathBuf> {
        let base = sift_env::xdg_dir("XDG_CACHE_HOME", ".cache")?;
        Some(base.join("sift").join("plugins"))
    }

    /// The file `bytes` compile to under `engine`.
    pub fn path_for(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compat = hasher.finish();
        let hash = blake3::hash(bytes).to_hex();
        self.dir.join(format!("{}-{compat:016x}.cwasm", &hash[..32]))
    }

    /// The compiled component: loaded from the cache when a trustworthy file is there,
    /// otherwise compiled and (best effort) stored.
    pub fn load_or_compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        let path = self.path_for(engine, bytes);
        // Read into memory, not mapped: `deserialize_file` maps the file, and a file truncated
        // under a live mapping (by another sift, by hand) kills the process with SIGBUS.
        let cached = (owned_by_me_only(&self.dir) && owned_by_me_only(&path))
            .then(|| fs::read(&path).ok())
            .flatten();
        if let Some(compiled) = cached {
            // SAFETY: wasmtime requires that the bytes be a compiled artifact that wasmtime
            // produced and that nobody untrusted could have altered. They are one of our own
            // files (written by `store` below from `Component::serialize`), in a folder and a
            // file that only this user owns and may write (checked just above), outside the
            // repository. wasmtime also checks the header, its version and the engine's
            // settings, and refuses an artifact made for another build.
            match unsafe { Component::deserialize(engine, &compiled) } {
                Ok(component) => return Ok(component),
                Err(e) => tracing::debug!("plugin cache {}: {e:#}; recompiling", path.display()),
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = self.store(&path, &component) {
            tracing::debug!("plugin cache {}: cannot store it: {e}", path.display());
        }
        Ok(component)
    }

    fn store(&self, path: &Path, component: &Component) -> std::io::Result<()> {
        let compiled = component.serialize().map_err(std::io::Error::other)?;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        if !owned_by_me_only(&self.dir) {
            return Err(std::io::Error::other(
                "the folder belongs to someone else or others may write it",
            ));
        }
        let tmp = self.dir.join(format!(".{}.tmp", std::process::id()));
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc_o_nofollow())
            .open(&tmp)?;
        file.write_all(&compiled)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    }
}

/// `O_NOFOLLOW`: the temporary file is never written through a symbolic link.
fn libc_o_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// Whether `path` (not followed if a link) is owned by this process's user and nobody else
/// may write it.
fn owned_by_me_only(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            !meta.file_type().is_symlink()
                && meta.uid() == rustix::process::getuid().as_raw()
                && meta.permissions().mode() & 0o022 == 0
        }
        Err(_) => false,
    }
}
