//! Raw CSR arrays for other tools (the peer benchmark scripts load them with
//! `numpy.fromfile`): a folder with `meta.json` (`nrows`, `ncols`, `nnz`) and the
//! little-endian arrays `row_ptr.u32`, `col_idx.u32`, `values.f32`.

use std::io::{Read, Write};
use std::path::Path;

use crate::io::write_atomically;
use crate::sparse::Csr;
use crate::{Error, Result};

/// The `format` field of `meta.json`.
pub const RAW_CSR_FORMAT: &str = "wgsparse-raw-csr";
/// The `version` field of `meta.json`; folders without one (older exports) read as version 1.
pub const RAW_CSR_VERSION: u64 = 1;

fn write_words<T: bytemuck::Pod>(path: &Path, data: &[T]) -> Result<()> {
    write_atomically(path, |w| {
        w.write_all(bytemuck::cast_slice(data))
            .map_err(|e| Error::io(path, e))
    })
}

/// Writes `m` into folder `dir` (created if missing), each file atomically.
pub fn write_csr_binary(dir: impl AsRef<Path>, m: &Csr) -> Result<()> {
    let dir = dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    if cfg!(target_endian = "big") {
        return Err(Error::Option(
            "raw CSR export assumes a little-endian host".into(),
        ));
    }
    write_words(&dir.join("row_ptr.u32"), &m.row_ptr)?;
    write_words(&dir.join("col_idx.u32"), &m.col_idx)?;
    write_words(&dir.join("values.f32"), &m.values)?;
    let meta = serde_json::json!({
        "format": RAW_CSR_FORMAT,
        "version": RAW_CSR_VERSION,
        "nrows": m.nrows,
        "ncols": m.ncols,
        "nnz": m.nnz(),
    });
    let path = dir.join("meta.json");
    write_atomically(&path, |w| {
        w.write_all(meta.to_string().as_bytes())
            .map_err(|e| Error::io(&path, e))
    })
}

fn read_words<T: bytemuck::Pod>(path: &Path, expected: usize) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>() as u64;
    let want = (expected as u64).checked_mul(size);
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    // Compare sizes before reading, so a meta.json that lies cannot make a large allocation.
    if want != Some(len) {
        return Err(Error::parse(
            path,
            0,
            format!("{len} bytes, expected {expected} values of {size} bytes"),
        ));
    }
    let mut bytes =
        crate::limits::try_with_capacity::<u8>(&path.display().to_string(), len as usize)?;
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 != len {
        return Err(Error::parse(
            path,
            0,
            format!("changed while read: {} bytes, expected {len}", bytes.len()),
        ));
    }
    Ok(bytes
        .chunks_exact(size as usize)
        .map(bytemuck::pod_read_unaligned)
        .collect())
}

/// Reads a folder written by [`write_csr_binary`], validating the matrix.
pub fn read_csr_binary(dir: impl AsRef<Path>) -> Result<Csr> {
    let dir = dir.as_ref();
    let meta_path = dir.join("meta.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| Error::io(&meta_path, e))?;
    let meta: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::parse(&meta_path, e.line() as u64, e.to_string()))?;
    let field = |name: &str| {
        meta[name]
            .as_u64()
            .filter(|&v| v <= u64::from(u32::MAX))
            .map(|v| v as usize)
            .ok_or_else(|| {
                Error::parse(
                    &meta_path,
                    1,
                    format!("missing or bad field {name:?} (a non-negative integer up to 2³²−1)"),
                )
            })
    };
    let format = meta["format"].as_str().unwrap_or(RAW_CSR_FORMAT);
    let version = meta["version"].as_u64().unwrap_or(RAW_CSR_VERSION);
    if format != RAW_CSR_FORMAT || version != RAW_CSR_VERSION {
        return Err(Error::parse(
            &meta_path,
            1,
            format!(
                "{format:?} version {version}, expected {RAW_CSR_FORMAT:?} version {RAW_CSR_VERSION}"
            ),
        ));
    }
    let (nrows, ncols, nnz) = (field("nrows")?, field("ncols")?, field("nnz")?);
    Csr::new(
        nrows,
        ncols,
        read_words(&dir.join("row_ptr.u32"), nrows + 1)?,
        read_words(&dir.join("col_idx.u32"), nnz)?,
        read_words(&dir.join("values.f32"), nnz)?,
    )
}
