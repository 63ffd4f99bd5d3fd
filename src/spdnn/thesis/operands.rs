//! The device operands of the thesis's approaches: a sparse matrix as a list of non-empty
//! rows (DCSR: ids, row pointers over the list, sorted columns, values, and optionally each
//! id's range, so it can be read by id), and W in CSR or ELL read by row id.

use crate::gpu::{Gpu, GpuBuffer};
use crate::sparse::Csr;
use crate::Result;

/// A sparse matrix on the device as a list of `rows` non-empty rows holding `nnz` entries:
/// list row d is row `ids[d]`, entries `ptr[d]..ptr[d + 1]` of `col`/`val`, columns
/// increasing. `beg`/`end` give each id's range (empty ids 0..0) when the matrix is read by
/// id (a right operand); they hold one unused element otherwise. `col`/`val` are sized
/// exactly (grown only when a layer needs more).
pub(super) struct Sparse {
    pub ids: GpuBuffer<u32>,
    pub ptr: GpuBuffer<u32>,
    pub col: GpuBuffer<u32>,
    pub val: GpuBuffer<f32>,
    pub beg: GpuBuffer<u32>,
    pub end: GpuBuffer<u32>,
    pub rows: usize,
    pub nnz: usize,
}

impl Sparse {
    /// Bytes of device memory the matrix holds.
    pub fn bytes(&self) -> u64 {
        4 * (self.ids.len() + self.ptr.len() + self.col.len() + self.val.len()) as u64
            + 4 * (self.beg.len() + self.end.len()) as u64
    }

    /// Empty storage for up to `max_rows` list rows of ids below `ids` (by-id ranges when
    /// `by_id`), no entries yet.
    pub fn empty(gpu: &Gpu, max_rows: usize, ids: usize, by_id: bool) -> Result<Self> {
        let by = if by_id { ids } else { 1 };
        Ok(Sparse {
            ids: GpuBuffer::zeroed(gpu, "spdnn.thesis.ids", max_rows)?,
            ptr: GpuBuffer::zeroed(gpu, "spdnn.thesis.ptr", max_rows + 1)?,
            col: GpuBuffer::zeroed(gpu, "spdnn.thesis.col", 0)?,
            val: GpuBuffer::zeroed(gpu, "spdnn.thesis.val", 0)?,
            beg: GpuBuffer::zeroed(gpu, "spdnn.thesis.beg", by)?,
            end: GpuBuffer::zeroed(gpu, "spdnn.thesis.end", by)?,
            rows: 0,
            nnz: 0,
        })
    }

    /// Uploads the non-empty rows of `m` (entries of value 0 dropped, columns sorted), with
    /// the list rows' storage sized for `max_rows` and by-id ranges when `by_id`.
    pub fn upload(gpu: &Gpu, m: &Csr, max_rows: usize, by_id: bool) -> Result<Self> {
        let mut ids = Vec::new();
        let mut ptr = vec![0u32];
        let mut col = Vec::new();
        let mut val = Vec::new();
        let mut beg = vec![0u32; if by_id { m.nrows } else { 1 }];
        let mut end = beg.clone();
        for_each_sorted_row(m, |i, c, v| {
            if c.is_empty() {
                return;
            }
            if by_id {
                beg[i] = col.len() as u32;
                end[i] = (col.len() + c.len()) as u32;
            }
            ids.push(i as u32);
            col.extend_from_slice(c);
            val.extend_from_slice(v);
            ptr.push(col.len() as u32);
        });
        let rows = ids.len();
        ids.resize(max_rows.max(rows), 0);
        ptr.resize(max_rows.max(rows) + 1, col.len() as u32);
        Ok(Sparse {
            rows,
            nnz: col.len(),
            ids: GpuBuffer::upload(gpu, "spdnn.thesis.ids", &ids)?,
            ptr: GpuBuffer::upload(gpu, "spdnn.thesis.ptr", &ptr)?,
            col: GpuBuffer::upload(gpu, "spdnn.thesis.col", &col)?,
            val: GpuBuffer::upload(gpu, "spdnn.thesis.val", &val)?,
            beg: GpuBuffer::upload(gpu, "spdnn.thesis.beg", &beg)?,
            end: GpuBuffer::upload(gpu, "spdnn.thesis.end", &end)?,
        })
    }

    /// The matrix back on the host as dense `nrows × ncols` (row-major); with `transposed`
    /// the list rows are columns of the result (CSC).
    pub fn dense(
        &self,
        gpu: &Gpu,
        nrows: usize,
        ncols: usize,
        transposed: bool,
    ) -> Result<Vec<f32>> {
        let ids = self.ids.read(gpu)?;
        let ptr = self.ptr.read(gpu)?;
        let col = self.col.read(gpu)?;
        let val = self.val.read(gpu)?;
        let mut out = vec![0f32; nrows * ncols];
        for d in 0..self.rows {
            let id = ids[d] as usize;
            for e in ptr[d] as usize..ptr[d + 1] as usize {
                let c = col[e] as usize;
                let (r, j) = if transposed { (c, id) } else { (id, c) };
                out[r * ncols + j] = val[e];
            }
        }
        Ok(out)
    }
}

/// Calls `f(row, columns, values)` for each row of `m` in order, columns increasing and
/// entries of value 0 dropped: the stored row itself when it already is so, else a sorted
/// copy (one scratch buffer for all rows, so large inputs cost no allocation per row).
fn for_each_sorted_row(m: &Csr, mut f: impl FnMut(usize, &[u32], &[f32])) {
    let mut scratch: Vec<(u32, f32)> = Vec::new();
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..m.nrows {
        let r = m.row_range(i);
        let (c, v) = (&m.col_idx[r.clone()], &m.values[r]);
        if c.windows(2).all(|w| w[0] < w[1]) && v.iter().all(|&x| x != 0.0) {
            f(i, c, v);
            continue;
        }
        scratch.clear();
        scratch.extend(
            c.iter()
                .zip(v)
                .map(|(&c, &v)| (c, v))
                .filter(|e| e.1 != 0.0),
        );
        scratch.sort_by_key(|e| e.0);
        cols.clear();
        vals.clear();
        cols.extend(scratch.iter().map(|e| e.0));
        vals.extend(scratch.iter().map(|e| e.1));
        f(i, &cols, &vals);
    }
}

/// W as a right operand read by row id: CSR (row k at `beg[k]..end[k]`) or ELL (slot t of
/// row k at `t · stride + k`, `end[k]` slots, `beg` all 0), columns increasing per row.
pub(super) struct Right {
    pub beg: GpuBuffer<u32>,
    pub end: GpuBuffer<u32>,
    pub col: GpuBuffer<u32>,
    pub val: GpuBuffer<f32>,
    pub stride: u32,
    /// Longest row.
    pub width: usize,
}

/// W's host layout for [`Right`]: (beg, end, col, val, longest row).
pub(super) type RightLayout = (Vec<u32>, Vec<u32>, Vec<u32>, Vec<f32>, usize);

impl Right {
    /// `w`'s host layout in CSR, or in ELL when `ell` (no device work: layers may be laid
    /// out in parallel).
    pub fn layout(w: &Csr, ell: bool) -> RightLayout {
        let n = w.nrows;
        let mut beg = vec![0u32; n];
        let mut end = vec![0u32; n];
        // CSR first (rows sorted, zeros dropped); ELL is laid out from it.
        let mut col = Vec::with_capacity(w.nnz());
        let mut val = Vec::with_capacity(w.nnz());
        for_each_sorted_row(w, |k, c, v| {
            beg[k] = col.len() as u32;
            col.extend_from_slice(c);
            val.extend_from_slice(v);
            end[k] = col.len() as u32;
        });
        let width = (0..n)
            .map(|k| (end[k] - beg[k]) as usize)
            .max()
            .unwrap_or(0);
        let (col, val) = if ell {
            let mut ecol = vec![u32::MAX; width * n];
            let mut eval = vec![0f32; width * n];
            for k in 0..n {
                let (b, e) = (beg[k] as usize, end[k] as usize);
                for t in 0..e - b {
                    ecol[t * n + k] = col[b + t];
                    eval[t * n + k] = val[b + t];
                }
                end[k] = (e - b) as u32;
                beg[k] = 0;
            }
            (ecol, eval)
        } else {
            (col, val)
        };
        (beg, end, col, val, width)
    }

    /// Uploads a layout of an `n`-row W.
    pub fn upload(gpu: &Gpu, (beg, end, col, val, width): RightLayout, n: usize) -> Result<Self> {
        Ok(Right {
            beg: GpuBuffer::upload(gpu, "spdnn.thesis.w_beg", &beg)?,
            end: GpuBuffer::upload(gpu, "spdnn.thesis.w_end", &end)?,
            col: GpuBuffer::upload(gpu, "spdnn.thesis.w_col", &col)?,
            val: GpuBuffer::upload(gpu, "spdnn.thesis.w_val", &val)?,
            stride: n as u32,
            width,
        })
    }

    /// Bytes of device memory W holds.
    pub fn bytes(&self) -> u64 {
        4 * (self.beg.len() + self.end.len() + self.col.len() + self.val.len()) as u64
    }
}
