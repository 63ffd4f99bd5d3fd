//! The tiling of `spdnn.sliced` (blocks of outputs, rows per workgroup, slice width, ELL
//! lanes), checked against the device and fixed for a plan.

use crate::gpu::Gpu;
use crate::spdnn::Options;
use crate::{Error, Result};

/// Most outputs per invocation, vec4s of rows, and accumulators (`MAX_T`, `MAX_RV`,
/// `MAX_ACC` in the shader).
pub const MAX_T: u32 = 8;
/// See [`MAX_T`].
pub const MAX_RV: u32 = 4;
/// Most input columns an invocation stages per turn (`MAX_UNROLL` in the shader).
pub const MAX_UNROLL: u32 = 4;
const MAX_ACC: u32 = 16;
/// Bytes of workgroup memory the kernel uses besides the staged slice.
const WG_EXTRA: u64 = 192;
// The staged slice has one more column (kept zero) for padding slots: see `Tiling::new`.

/// The tiling of `spdnn.sliced`, fixed for a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Invocations per workgroup.
    pub wg: u32,
    /// Outputs per invocation (register tile), 1..=8.
    pub t: u32,
    /// vec4s of rows per workgroup (rows per workgroup = 4·rv), 1..=4.
    pub rv: u32,
    /// Input columns per slice.
    pub slice: u32,
    /// Lanes per ELL group (divides `wg`; the options' `ell_lanes`, at most `wg`).
    pub lanes: u32,
    /// Input columns each invocation stages per turn, 1..=[`MAX_UNROLL`].
    pub unroll: u32,
}

impl Tiling {
    /// Output neurons per block (B = wg · t).
    pub fn block(&self) -> usize {
        (self.wg * self.t) as usize
    }

    /// Active rows per workgroup (R = 4 · rv).
    pub fn rows(&self) -> usize {
        4 * self.rv as usize
    }

    /// Checks the options against the device and picks the slice: the widest whose staged
    /// rows fit workgroup memory (at most N), or the one asked for. T is lowered to
    /// ⌈N / wg⌉ when larger (a block wider than N would only idle).
    pub fn new(gpu: &Gpu, n: usize, options: &Options) -> Result<Self> {
        let wg = options.workgroup_on(gpu);
        let (t, rv) = (options.outputs_per_invocation, options.row_vecs);
        if !(1..=MAX_T).contains(&t) || !(1..=MAX_RV).contains(&rv) || t * rv > MAX_ACC {
            return Err(Error::Option(format!(
                "{t} outputs per invocation × {rv} vec4s of rows: each must be in 1..={MAX_T} \
                 and 1..={MAX_RV}, their product at most {MAX_ACC}"
            )));
        }
        if options.slice_sums && options.segments_together {
            return Err(Error::Option(
                "slice sums and segments together cannot both be on (each keeps its own \
                 per-output registers)"
                    .into(),
            ));
        }
        let unroll = options.stage_unroll;
        if !(1..=MAX_UNROLL).contains(&unroll) {
            return Err(Error::Option(format!(
                "a staging unroll of {unroll} columns per turn (1..={MAX_UNROLL})"
            )));
        }
        let lanes = options.ell_lanes.min(wg);
        if lanes == 0 || !wg.is_multiple_of(lanes) {
            return Err(Error::Option(format!(
                "a workgroup of {wg} invocations is not a multiple of {} lanes per ELL group",
                options.ell_lanes
            )));
        }
        let room = u64::from(gpu.caps.max_workgroup_storage_bytes).saturating_sub(WG_EXTRA);
        // The slice's columns and the zero column that padding slots point at.
        let fit = (room / (16 * u64::from(rv))).saturating_sub(1);
        let slice = match options.slice {
            Some(s) if s == 0 || u64::from(s) > fit => {
                return Err(Error::TooLarge {
                    what: format!("a slice of {s} columns × {} rows of spdnn.sliced", 4 * rv),
                    needed: format!(
                        "{} bytes of workgroup memory",
                        u64::from(s) * 16 * u64::from(rv) + WG_EXTRA
                    ),
                    limit: format!("{} bytes", gpu.caps.max_workgroup_storage_bytes),
                })
            }
            Some(s) => s,
            None => fit.min(n as u64).max(1) as u32,
        };
        if fit == 0 {
            return Err(Error::TooLarge {
                what: format!("one column of {} rows of spdnn.sliced", 4 * rv),
                needed: format!(
                    "{} bytes of workgroup memory",
                    16 * u64::from(rv) + WG_EXTRA
                ),
                limit: format!("{} bytes", gpu.caps.max_workgroup_storage_bytes),
            });
        }
        // Outputs past N would only idle: a block need not be wider than N.
        let t = t.min(n.div_ceil(wg as usize) as u32).max(1);
        Ok(Tiling {
            wg,
            t,
            rv,
            slice,
            lanes,
            unroll,
        })
    }
}
