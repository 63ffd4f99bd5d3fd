//! Device-resident twins of the host formats.

use std::sync::Arc;

use crate::gpu::{Gpu, GpuBuffer};
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

/// A dense row-major matrix on the device, rows padded with zeros to `stride` floats
/// (a multiple of 8, so kernels can load two `vec4`s per step with no tail).
pub struct GpuDense {
    /// Number of rows.
    pub nrows: usize,
    /// Logical number of columns.
    pub ncols: usize,
    /// Row stride in floats: `ncols` rounded up to a multiple of 8.
    pub stride: usize,
    /// `nrows * stride` floats.
    pub data: GpuBuffer<f32>,
}

impl GpuDense {
    /// The row stride used for `ncols` columns.
    pub fn stride_for(ncols: usize) -> usize {
        ncols.div_ceil(8).max(1) * 8
    }

    /// Uploads a host matrix, padding each row to the stride.
    pub fn upload(gpu: &Gpu, m: &Dense) -> Result<Self> {
        m.validate()?;
        let stride = Self::stride_for(m.ncols);
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

    /// Writes rows `rows` of `m` over this matrix in place (same shape; the buffers stay
    /// resident, so a caller iterating with new operands allocates nothing). `m` is not
    /// validated here: the caller checks it once for all its devices.
    pub fn write_rows(&self, gpu: &Gpu, m: &Dense, rows: std::ops::Range<usize>) -> Result<()> {
        if rows.len() != self.nrows || m.ncols != self.ncols || rows.end > m.nrows {
            return Err(Error::Shape(format!(
                "writing rows {rows:?} of a {}×{} matrix over a {}×{} one",
                m.nrows, m.ncols, self.nrows, self.ncols
            )));
        }
        let src = &m.data[rows.start * m.ncols..rows.end * m.ncols];
        if self.stride == m.ncols {
            return self.data.write(gpu, src);
        }
        let mut padded = crate::limits::try_vec("a padded dense matrix", self.data.len(), 0f32)?;
        for (dst, row) in padded
            .chunks_exact_mut(self.stride)
            .zip(src.chunks_exact(m.ncols))
        {
            dst[..m.ncols].copy_from_slice(row);
        }
        self.data.write(gpu, &padded)
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
