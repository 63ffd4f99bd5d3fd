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

/// Writes SDDMM operands beside a raw CSR export in `dir`, for the peer scripts to run on
/// the same inputs and compare with: `a-kK.f32` (M×K) and `b-kK.f32` (N×K), row-major and
/// unpadded; `p-kK.f32`, every `step`-th value of P in S's CSR order; `p-kK.json` with
/// `k` and `step`.
pub fn write_sddmm_operands(
    dir: impl AsRef<Path>,
    a: &crate::sparse::Dense,
    b: &crate::sparse::Dense,
    p: &[f32],
    step: usize,
) -> Result<()> {
    let dir = dir.as_ref();
    let k = a.ncols;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let step = step.max(1);
    write_words(&dir.join(format!("a-k{k}.f32")), &a.data)?;
    write_words(&dir.join(format!("b-k{k}.f32")), &b.data)?;
    let sampled: Vec<f32> = p.iter().step_by(step).copied().collect();
    write_words(&dir.join(format!("p-k{k}.f32")), &sampled)?;
    let meta = serde_json::json!({ "k": k, "step": step });
    let path = dir.join(format!("p-k{k}.json"));
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
