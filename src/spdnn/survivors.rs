//! Reading back which rows survived the last layer, for both GPU paths: each chunk keeps
//! its surviving row ids compacted on the device, with their count.

use crate::gpu::{Gpu, GpuBuffer};
use crate::{Error, Result};

/// The surviving row ids of one chunk of `rows` rows (0-based within the chunk): the
/// device's count, checked against the chunk (a larger one means `kernel` misbehaved), then
/// that many ids.
pub(super) fn read_ids(
    gpu: &Gpu,
    count: &GpuBuffer<u32>,
    ids: &GpuBuffer<u32>,
    rows: usize,
    kernel: &str,
) -> Result<Vec<u32>> {
    let count = count.read(gpu)?[0] as usize;
    if count > rows {
        return Err(Error::Check {
            kernel: kernel.into(),
            message: format!("active count {count} exceeds the chunk's {rows} rows"),
        });
    }
    let mut ids = ids.read(gpu)?;
    ids.truncate(count);
    Ok(ids)
}

/// The categories: every chunk's surviving ids offset by the chunk's first row, increasing.
pub(super) fn categories(
    chunks: impl IntoIterator<Item = Result<(usize, Vec<u32>)>>,
) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for chunk in chunks {
        let (start, ids) = chunk?;
        out.extend(ids.iter().map(|&i| start as u32 + i));
    }
    out.sort_unstable();
    Ok(out)
}
