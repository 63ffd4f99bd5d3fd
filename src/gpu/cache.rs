//! The autotuners' on-disk cache: one JSON file per system under `$WGSPARSE_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/wgsparse`, else `~/.cache/wgsparse`, each a map from a key (adapter,
//! variant, shape bucket) to the tuned configuration, written atomically.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// The path of cache file `file` (e.g. `sddmm-tune.json`), if a cache folder is known.
pub fn cache_file(file: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("WGSPARSE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("wgsparse")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/wgsparse")))?;
    Some(dir.join(file))
}

/// The entries of cache file `file`; empty when it is missing or unreadable (a stale or
/// corrupt cache only costs a re-tune).
pub fn load_cache<T: DeserializeOwned>(file: &str) -> BTreeMap<String, T> {
    cache_file(file)
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Replaces cache file `file` with `entries`, atomically.
pub fn store_cache<T: Serialize>(file: &str, entries: &BTreeMap<String, T>) -> Result<()> {
    let Some(path) = cache_file(file) else {
        return Ok(());
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let json = serde_json::to_vec_pretty(entries).expect("cache serializes");
    crate::io::write_atomically(&path, |w| {
        std::io::Write::write_all(w, &json).map_err(|e| Error::io(&path, e))
    })
}
