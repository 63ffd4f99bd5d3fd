//! Raw CSR arrays for other tools (the peer benchmark scripts load them with
//! `numpy.fromfile`): a folder with `meta.json` (`nrows`, `ncols`, `nnz`) and the
//! little-endian arrays `row_ptr.u32`, `col_idx.u32`, `values.f32`.

use std::io::{Read, Write};
use std::path::Path;

use crate::io::write_atomically;
use crate::sparse::Csr;
use crate::{Error, Result};

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
    let meta = serde_json::json!({ "nrows": m.nrows, "ncols": m.ncols, "nnz": m.nnz() });
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
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| Error::io(path, e))?;
    let size = std::mem::size_of::<T>();
    if bytes.len() != expected * size {
        return Err(Error::parse(
            path,
            0,
            format!(
                "{} bytes, expected {} ({} values)",
                bytes.len(),
                expected * size,
                expected
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(size)
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
            .map(|v| v as usize)
            .ok_or_else(|| Error::parse(&meta_path, 1, format!("missing or bad field {name:?}")))
    };
    let (nrows, ncols, nnz) = (field("nrows")?, field("ncols")?, field("nnz")?);
    Csr::new(
        nrows,
        ncols,
        read_words(&dir.join("row_ptr.u32"), nrows + 1)?,
        read_words(&dir.join("col_idx.u32"), nnz)?,
        read_words(&dir.join("values.f32"), nnz)?,
    )
}
