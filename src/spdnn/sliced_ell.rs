//! The sliced-ELL layout of one layer's W, built on the host ([`SlicedEll`]), with the
//! per-layer facts the fast path reads beside it: whether every weight is one value
//! (packed positions, no weights) and W's column sums (the constant-row shortcut).

use crate::sparse::Csr;
use crate::{Error, Result};

use super::sliced::Tiling;

/// One layer in sliced ELL: `seg[q]..seg[q+1]` are the words of segment
/// q = ((block · slices + slice) · t + ti) · groups + group, lane i's word k at
/// `seg[q] + k · lanes + i`. A word is one entry (its source's position within the slice,
/// with its weight in `val`) or, when every weight of the layer is the same (`packed`), two
/// entries' positions as u16 halves (slot 2k low, 2k + 1 high) and no `val`. Padding points
/// at position `slice`, which the kernel keeps zero, with weight 0.
pub(crate) struct SlicedEll {
    /// Segment offsets in words (one more than the segments).
    pub seg: Vec<u32>,
    /// Positions (one or two per word).
    pub pos: Vec<u32>,
    /// Each entry's weight (empty when packed).
    pub val: Vec<f32>,
    /// Entry slots, padding included (twice the words when packed).
    pub slots: usize,
}

/// The one value of every weight of `w`, if they are all equal (and `w` has any).
pub(crate) fn uniform_value(w: &Csr) -> Option<f32> {
    let first = *w.values.first()?;
    w.values
        .iter()
        .all(|v| v.to_bits() == first.to_bits())
        .then_some(first)
}

impl SlicedEll {
    /// Builds the sliced ELL of `w` (`n × n`, row i = source neuron) for `tiling`; `packed`
    /// drops the weights (the caller has checked they are all equal) and packs positions.
    pub fn new(w: &Csr, tiling: &Tiling, packed: bool) -> Result<Self> {
        let n = w.ncols;
        let s = tiling.slice as usize;
        let slices = n.div_ceil(s);
        let b = tiling.block();
        let blocks = n.div_ceil(b);
        let lanes = tiling.lanes as usize;
        let groups = tiling.wg as usize / lanes;
        let wt = w.transpose();
        // Where each output's sources enter each slice (the sources are sorted).
        let mut cut = vec![0u32; n * (slices + 1)];
        for j in 0..n {
            let r = wt.row_range(j);
            let cols = &wt.col_idx[r.clone()];
            for sl in 0..=slices {
                let bound = (sl * s).min(n) as u32;
                cut[j * (slices + 1) + sl] =
                    (r.start + cols.partition_point(|&c| c < bound)) as u32;
            }
        }
        let segments = blocks * slices * tiling.t as usize * groups;
        let mut seg = Vec::with_capacity(segments + 1);
        seg.push(0u32);
        let mut pos = Vec::new();
        let mut val = Vec::new();
        let mut slots = 0usize;
        let pad = tiling.slice;
        for block in 0..blocks {
            for sl in 0..slices {
                for ti in 0..tiling.t as usize {
                    for g in 0..groups {
                        let first = block * b + ti * tiling.wg as usize + g * lanes;
                        let range = |lane: usize| {
                            let j = first + lane;
                            if j >= n {
                                return 0..0;
                            }
                            let at = j * (slices + 1) + sl;
                            cut[at] as usize..cut[at + 1] as usize
                        };
                        let mut width = (0..lanes).map(|l| range(l).len()).max().unwrap_or(0);
                        if packed {
                            width = width.next_multiple_of(2);
                        }
                        slots += width * lanes;
                        // Slot k of `lane`: (position, weight).
                        let slot = |lane: usize, k: usize| {
                            let r = range(lane);
                            if k < r.len() {
                                let e = r.start + k;
                                (wt.col_idx[e] - (sl * s) as u32, wt.values[e])
                            } else {
                                (pad, 0.0)
                            }
                        };
                        if packed {
                            for k in (0..width).step_by(2) {
                                for lane in 0..lanes {
                                    pos.push(slot(lane, k).0 | (slot(lane, k + 1).0 << 16));
                                }
                            }
                        } else {
                            for k in 0..width {
                                for lane in 0..lanes {
                                    let (p, v) = slot(lane, k);
                                    pos.push(p);
                                    val.push(v);
                                }
                            }
                        }
                        let end = u32::try_from(pos.len()).map_err(|_| Error::TooLarge {
                            what: "one layer in sliced ELL".into(),
                            needed: format!("{} words", pos.len()),
                            limit: "2³² words (u32 offsets)".into(),
                        })?;
                        seg.push(end);
                    }
                }
            }
        }
        // Bindings cannot be empty; no segment refers to these.
        if pos.is_empty() {
            pos.push(0);
        }
        if val.is_empty() {
            val.push(0.0);
        }
        Ok(SlicedEll {
            seg,
            pos,
            val,
            slots,
        })
    }
}

/// The column sums of `w` for the constant-row fast path: Σ_k W[k, j] summed in f64, or
/// the entry count of column j when `packed` (the kernel applies the layer's one weight to
/// it as to the gathered sums). A column with no entry sums to 0.
pub(crate) fn column_sums(w: &Csr, packed: bool) -> Vec<f32> {
    let mut sums = vec![0f64; w.ncols];
    for (&j, &v) in w.col_idx.iter().zip(&w.values) {
        sums[j as usize] += if packed { 1.0 } else { f64::from(v) };
    }
    sums.into_iter().map(|x| x as f32).collect()
}
