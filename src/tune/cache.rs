//! The autotune cache: one JSON file per system, `{format, version, entries}`, each entry a
//! tuned configuration under a key naming the adapter and shape bucket.
//!
//! Writes are atomic (a temporary file renamed over the old one) and merge with what is on
//! disk at that moment, so two processes tuning at once both leave a complete, valid file
//! (at worst one's newest entry is tuned again later). A file that cannot be read back — cut
//! short, corrupt, or of another format version — is an [`Error::Parse`] from
//! [`TuneCache::read`]; [`TuneCache::get`] then warns once on stderr and reports a miss, so
//! the caller re-tunes and the next write replaces the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The `format` field of every cache file.
pub const FORMAT: &str = "wgsparse-tune-cache";
/// The current format version; files of another version are re-tuned and replaced.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct File {
    format: String,
    version: u32,
    entries: BTreeMap<String, serde_json::Value>,
}

/// A cache file of tuned configurations.
#[derive(Clone, Debug)]
pub struct TuneCache {
    path: PathBuf,
}

/// Set once a warning about an unreadable cache has been printed.
static WARNED: AtomicBool = AtomicBool::new(false);

impl TuneCache {
    /// The cache at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        TuneCache { path: path.into() }
    }

    /// The cache file `name` in the default folder: `$WGSPARSE_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/wgsparse`, else `~/.cache/wgsparse`; `None` when none is known.
    pub fn named(name: &str) -> Option<Self> {
        let dir = std::env::var_os("WGSPARSE_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("wgsparse"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/wgsparse"))
            })?;
        Some(Self::at(dir.join(name)))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry; empty when the file does not exist. A file that is not a complete cache
    /// of this format version is an [`Error::Parse`] naming it.
    pub fn read(&self) -> Result<BTreeMap<String, serde_json::Value>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        let file: File = serde_json::from_slice(&bytes).map_err(|e| {
            Error::parse(
                &self.path,
                e.line() as u64,
                format!("not a {FORMAT} file of version {VERSION} (cut short or corrupt?): {e}"),
            )
        })?;
        if file.format != FORMAT || file.version != VERSION {
            return Err(Error::parse(
                &self.path,
                0,
                format!(
                    "{} version {}, expected {FORMAT} version {VERSION}",
                    file.format, file.version
                ),
            ));
        }
        Ok(file.entries)
    }

    /// The entry under `key`; `None` on a miss, on an entry of another shape, or when the
    /// file cannot be read (then with one warning on stderr per process).
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let mut entries = self.read_or_warn();
        serde_json::from_value(entries.remove(key)?).ok()
    }

    /// Stores `value` under `key`: re-reads the file (dropping it when unreadable), adds the
    /// entry and replaces the file atomically.
    pub fn insert<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut entries = self.read_or_warn();
        let value = serde_json::to_value(value)
            .map_err(|e| Error::invalid("autotune cache entry", e.to_string()))?;
        entries.insert(key.to_string(), value);
        let file = File {
            format: FORMAT.into(),
            version: VERSION,
            entries,
        };
        crate::io::write_atomically(&self.path, |w| {
            serde_json::to_writer_pretty(&mut *w, &file)
                .map_err(|e| Error::io(&self.path, std::io::Error::other(e)))
        })
    }

    fn read_or_warn(&self) -> BTreeMap<String, serde_json::Value> {
        self.read().unwrap_or_else(|e| {
            if !WARNED.swap(true, Ordering::Relaxed) {
                eprintln!("wgsparse: warning: ignoring the autotune cache, re-tuning: {e}");
            }
            BTreeMap::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corrupt_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TuneCache::at(dir.path().join("sub/t.json"));
        assert!(cache.read().unwrap().is_empty());
        cache.insert("a", &[1u32, 2]).unwrap();
        cache.insert("b", &7u32).unwrap();
        assert_eq!(cache.get::<Vec<u32>>("a"), Some(vec![1, 2]));
        assert_eq!(cache.get::<u32>("b"), Some(7));
        assert_eq!(cache.get::<u32>("c"), None);
        let full = std::fs::read(cache.path()).unwrap();
        for cut in [0, 1, full.len() / 2, full.len() - 2] {
            std::fs::write(cache.path(), &full[..cut]).unwrap();
            let e = cache.read().unwrap_err().to_string();
            assert!(e.contains("t.json") && e.contains("version 1"), "{e}");
            assert_eq!(cache.get::<u32>("b"), None);
        }
        let old = br#"{"adapter|sddmm.auto|m1": {"variant": "Naive"}}"#;
        std::fs::write(cache.path(), old).unwrap();
        assert!(cache.read().is_err());
        let other = br#"{"format": "wgsparse-tune-cache", "version": 99, "entries": {}}"#;
        std::fs::write(cache.path(), other).unwrap();
        assert!(cache.read().unwrap_err().to_string().contains("version 99"));
        // A write replaces an unreadable file with a valid one.
        cache.insert("b", &8u32).unwrap();
        assert_eq!(cache.get::<u32>("b"), Some(8));
    }

    #[test]
    fn concurrent_writers_leave_a_valid_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::thread::scope(|scope| {
            for w in 0..2 {
                let cache = TuneCache::at(&path);
                scope.spawn(move || {
                    for i in 0..40 {
                        cache.insert(&format!("w{w}-{i}"), &i).unwrap();
                    }
                });
            }
            let cache = TuneCache::at(&path);
            scope.spawn(move || {
                for _ in 0..200 {
                    cache.read().unwrap();
                }
            });
        });
        let entries = TuneCache::at(&path).read().unwrap();
        // Each writer's last entry survives at least in its own final write.
        assert!(entries.len() >= 2, "{entries:?}");
        assert!(
            entries.keys().any(|k| k.starts_with("w0-"))
                || entries.keys().any(|k| k.starts_with("w1-"))
        );
    }
}
