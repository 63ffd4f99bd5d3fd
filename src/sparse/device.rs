//! Device-resident twins of the host formats.

use std::sync::Arc;

use crate::gpu::{copy_threads, Gpu, GpuBuffer, SendWrite, Upload};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};

/// A CSR matrix on the device. The pattern arrays are shared (`Arc`) so outputs with the
/// same pattern (e.g. SDDMM's P) cost only a values buffer.
pub struct GpuCsr {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row offsets (nrows + 1).
    pub row_ptr: Arc<GpuBuffer<u32>>,
    /// Column indices.
    pub col_idx: Arc<GpuBuffer<u32>>,
    /// Values.
    pub values: GpuBuffer<f32>,
}

impl GpuCsr {
    /// Uploads a (validated) host CSR matrix.
    pub fn upload(gpu: &Gpu, csr: &Csr) -> Result<Self> {
        Ok(GpuCsr {
            nrows: csr.nrows,
            ncols: csr.ncols,
            row_ptr: Arc::new(GpuBuffer::upload(gpu, "csr.row_ptr", &csr.row_ptr)?),
            col_idx: Arc::new(GpuBuffer::upload(gpu, "csr.col_idx", &csr.col_idx)?),
            values: GpuBuffer::upload(gpu, "csr.values", &csr.values)?,
        })
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Reads the matrix back to the host.
    pub fn read(&self, gpu: &Gpu) -> Result<Csr> {
        Csr::new(
            self.nrows,
            self.ncols,
            self.row_ptr.read(gpu)?,
            self.col_idx.read(gpu)?,
            self.values.read(gpu)?,
        )
    }
}

/// A dense row-major matrix on the device, rows padded with zeros to `stride` floats: a
/// multiple of 8 from [`GpuDense::upload`] (so SDDMM's kernels can load two `vec4`s per step
/// with no tail), of whatever multiple a caller needs from [`GpuDense::upload_with_multiple`]
/// (1: rows unpadded, as the fused pattern stores dense X).
pub struct GpuDense {
    /// Number of rows.
    pub nrows: usize,
    /// Logical number of columns.
    pub ncols: usize,
    /// Row stride in floats: `ncols` rounded up to the upload's multiple (8 by default).
    pub stride: usize,
    /// `nrows * stride` floats.
    pub data: GpuBuffer<f32>,
}

impl GpuDense {
    /// The stride multiple of [`GpuDense::upload`]: 8 floats.
    pub const DEFAULT_MULTIPLE: usize = 8;

    /// The row stride [`GpuDense::upload`] uses for `ncols` columns.
    pub fn stride_for(ncols: usize) -> usize {
        Self::stride_for_multiple(ncols, Self::DEFAULT_MULTIPLE)
    }

    /// The row stride for `ncols` columns rounded up to a multiple of `multiple` floats
    /// (at least one multiple; `multiple` 0 counts as 1).
    pub fn stride_for_multiple(ncols: usize, multiple: usize) -> usize {
        let multiple = multiple.max(1);
        ncols.div_ceil(multiple).max(1) * multiple
    }

    /// Uploads a host matrix, padding each row to a multiple of 8 floats.
    pub fn upload(gpu: &Gpu, m: &Dense) -> Result<Self> {
        Self::upload_with_multiple(gpu, m, Self::DEFAULT_MULTIPLE)
    }

    /// Uploads a host matrix, padding each row to a multiple of `multiple` floats
    /// ([`GpuDense::stride_for_multiple`]; 1 stores the rows as they are).
    pub fn upload_with_multiple(gpu: &Gpu, m: &Dense, multiple: usize) -> Result<Self> {
        m.validate()?;
        let stride = Self::stride_for_multiple(m.ncols, multiple);
        let len = m.nrows.checked_mul(stride).ok_or_else(|| Error::TooLarge {
            what: format!("dense {}×{} matrix", m.nrows, m.ncols),
            needed: "more than usize elements".into(),
            limit: "usize::MAX".into(),
        })?;
        GpuBuffer::<f32>::check_fits(gpu, "dense matrix", len)?;
        let data = if stride == m.ncols {
            GpuBuffer::upload(gpu, "dense", &m.data)?
        } else {
            let mut padded = vec![0f32; len];
            for i in 0..m.nrows {
                padded[i * stride..i * stride + m.ncols].copy_from_slice(m.row(i));
            }
            GpuBuffer::upload(gpu, "dense", &padded)?
        };
        Ok(GpuDense {
            nrows: m.nrows,
            ncols: m.ncols,
            stride,
            data,
        })
    }

    /// Lays rows `rows` of `m` out in `up` (an [`Upload`] for this matrix's buffer) padded to
    /// the stride, checking on the way that every value is finite: the rows are cut over up
    /// to `threads` host threads. Nothing reaches the device until `up.flush(gpu, &self.data)`;
    /// a non-finite value is an error naming `what`, the row and the column (and then the
    /// upload is not flushed).
    pub fn fill_rows(
        &self,
        gpu: &Gpu,
        up: &Upload,
        m: &Dense,
        rows: std::ops::Range<usize>,
        what: &str,
        threads: usize,
    ) -> Result<()> {
        if rows.len() != self.nrows {
            return Err(Error::Shape(format!(
                "writing rows {rows:?} of a {}×{} matrix over a {}×{} one",
                m.nrows, m.ncols, self.nrows, self.ncols
            )));
        }
        self.fill_piece(gpu, up, m, rows, what, threads)
    }

    /// [`GpuDense::fill_rows`] for a piece of this matrix: `up` holds (at least) `rows.len()`
    /// padded rows, to be flushed at the piece's offset ([`Upload::flush_at`]).
    pub fn fill_piece(
        &self,
        gpu: &Gpu,
        up: &Upload,
        m: &Dense,
        rows: std::ops::Range<usize>,
        what: &str,
        threads: usize,
    ) -> Result<()> {
        if rows.len() > self.nrows || m.ncols != self.ncols || rows.end > m.nrows {
            return Err(Error::Shape(format!(
                "writing rows {rows:?} of a {}×{} matrix over a {}×{} one",
                m.nrows, m.ncols, self.nrows, self.ncols
            )));
        }
        let row_bytes = self.stride * std::mem::size_of::<f32>();
        if up.bytes() < (rows.len() * row_bytes) as u64 {
            return Err(Error::Shape(format!(
                "a staging buffer of {} bytes for {} rows of a {}×{} matrix",
                up.bytes(),
                rows.len(),
                self.nrows,
                self.ncols
            )));
        }
        let (n, ncols, stride) = (rows.len(), m.ncols, self.stride);
        let src = &m.data[rows.start * ncols..rows.end * ncols];
        let parts = copy_threads(n * row_bytes, threads).min(n.max(1));
        let per = n.div_ceil(parts).max(1);
        up.fill(gpu, |mut rest| {
            let mut chunks = Vec::with_capacity(parts);
            for r0 in (0..n).step_by(per) {
                let r1 = (r0 + per).min(n);
                let (head, tail) = rest.split_at((r1 - r0) * row_bytes);
                rest = tail;
                chunks.push((r0, r1, SendWrite(head)));
            }
            let copy = |(r0, r1, w): (usize, usize, SendWrite<'_>)| {
                let first = rows.start + r0;
                copy_padded(
                    w.0,
                    &src[r0 * ncols..r1 * ncols],
                    ncols,
                    stride,
                    first,
                    what,
                )
            };
            if chunks.len() <= 1 {
                return chunks.into_iter().try_for_each(copy);
            }
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunks
                    .into_iter()
                    .map(|c| scope.spawn(move || copy(c)))
                    .collect();
                handles
                    .into_iter()
                    .try_for_each(|h| h.join().expect("a copy thread panicked"))
            })
        })
    }

    /// Reads the matrix back, dropping the padding.
    pub fn read(&self, gpu: &Gpu) -> Result<Dense> {
        let raw = self.data.read(gpu)?;
        let mut data = Vec::with_capacity(self.nrows * self.ncols);
        for i in 0..self.nrows {
            data.extend_from_slice(&raw[i * self.stride..i * self.stride + self.ncols]);
        }
        Ok(Dense {
            nrows: self.nrows,
            ncols: self.ncols,
            data,
        })
    }
}

/// Copies rows `src` (`ncols` each; the first is row `first` of `what`) into `w`, each padded
/// with zeros to `stride`, after checking each is finite.
fn copy_padded(
    mut w: wgpu::WriteOnly<'_, [u8]>,
    src: &[f32],
    ncols: usize,
    stride: usize,
    first: usize,
    what: &str,
) -> Result<()> {
    let not_finite = |at: usize| {
        Error::invalid(
            what,
            format!(
                "value {} at row {}, column {} is not finite",
                src[at],
                first + at / ncols.max(1),
                at % ncols.max(1)
            ),
        )
    };
    if stride == ncols {
        if let Some(at) = src.iter().position(|v| !v.is_finite()) {
            return Err(not_finite(at));
        }
        w.slice(..std::mem::size_of_val(src))
            .copy_from_slice(bytemuck::cast_slice(src));
        return Ok(());
    }
    let (row_bytes, data_bytes) = (4 * stride, 4 * ncols);
    for (i, row) in src.chunks_exact(ncols).enumerate() {
        if let Some(j) = row.iter().position(|v| !v.is_finite()) {
            return Err(not_finite(i * ncols + j));
        }
        let at = i * row_bytes;
        w.slice(at..at + data_bytes)
            .copy_from_slice(bytemuck::cast_slice(row));
        w.slice(at + data_bytes..at + row_bytes).fill(0);
    }
    Ok(())
}
