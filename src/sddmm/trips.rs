//! Loop iterations one invocation of each SDDMM kernel runs, at worst, for a resolved
//! [`Config`]: what a software device's loop cap ([`crate::gpu::loop_cap`]; llvmpipe ends
//! every loop of an invocation after 65,535 iterations in all, silently) is checked against.
//! Every loop counts, the constant-trip ones (UNROLL, REGS, the reductions) included, since
//! nothing guarantees the compiler unrolls them; a loop whose lanes disagree runs as long as
//! its longest lane.
//!
//! What grows with the input: K (`naive` and `warp` loop over a row of A; the tiled kernels
//! loop over ⌈K / Tk⌉ k-slices), the nonzeros one invocation walks (`row_run`: a run of up
//! to `block_nnz` nonzeros of one row within a column panel of Tj; SM-L2: a block of up to `block_nnz`; SM-SM: a Ti × Tj tile, up to Ti·Tj
//! nonzeros of a dense S) and the rows staged per slice (Ti, Tj).

use crate::sddmm::{Config, Variant};

/// log2 of a power of two.
fn log2(v: u32) -> u64 {
    v.max(1).trailing_zeros() as u64
}

/// `vsg_sum` (shaders/shared/reduce.wgsl): one step per halving, shuffles or workgroup memory.
fn vsg_sum(lanes: u32) -> u64 {
    log2(lanes)
}

/// `vsg_transpose_sum`: with shuffles Σ (1 + m) over m = lanes/2 … 1; without, `lanes`
/// `vsg_sum`s. The larger of the two.
fn transpose_sum(lanes: u32) -> u64 {
    lanes as u64 * (1 + log2(lanes))
}

/// `sddmm.naive`: one nonzero, its dot product over `stride / 4` vec4s.
pub fn naive(stride: usize) -> u64 {
    (stride / 4) as u64
}

/// `sddmm.warp`: UNROLL nonzeros per virtual subgroup, each a lane's share of the dot product
/// (two vec4s a step) and a reduction.
pub fn warp(stride: usize, vws: u32, unroll: u32) -> u64 {
    let u = unroll as u64;
    2 * u + u * ((stride / 4) as u64).div_ceil(2 * vws as u64) + u * vsg_sum(vws)
}

/// `sddmm.row_run`: a run of up to `run_len` nonzeros, `vws` a step; each step loads the
/// lane's REGS vec4s of A for each of `vws` nonzeros, then a transposed reduction.
pub fn row_run(stride: usize, run_len: usize, vws: u32) -> u64 {
    let regs = ((stride / 4) as u64).div_ceil(vws as u64);
    let steps = (run_len as u64).div_ceil(vws as u64);
    regs + steps * (1 + vws as u64 * (1 + regs) + transpose_sum(vws))
}

/// The longest row run (a multiple of `vws`) whose invocations run at most `budget`
/// iterations; 0 when not even one step fits.
pub fn row_run_max_len(stride: usize, vws: u32, budget: u64) -> usize {
    let regs = ((stride / 4) as u64).div_ceil(vws as u64);
    let step = 1 + vws as u64 * (1 + regs) + transpose_sum(vws);
    let steps = budget.saturating_sub(regs) / step;
    (steps * vws as u64).min(usize::MAX as u64 / 2) as usize
}

/// Slices of `tk` floats over a padded row of `stride`.
fn slices(stride: usize, tk: usize) -> u64 {
    stride.div_ceil(tk.max(1)) as u64
}

/// Iterations of one step of SM-L2's loop over a block: UNROLL nonzeros per virtual
/// subgroup, each its share of a slice (two vec4s a step) and a reduction.
fn sm_l2_step(tk: usize, vws: u32, unroll: u32) -> u64 {
    let u = unroll as u64;
    1 + 2 * u + u * ((tk / 4) as u64).div_ceil(2 * vws as u64) + u * vsg_sum(vws)
}

/// Iterations of one slice of SM-L2 besides its steps: staging Ti rows of the slice.
fn sm_l2_slice_fixed(tk: usize, ti: usize, workgroup: u32) -> u64 {
    1 + (ti as u64 * (tk / 4) as u64).div_ceil(workgroup as u64)
}

/// `sddmm.sm_l2`: a block of up to `block_nnz` nonzeros of up to `ti` rows, slice by slice.
pub fn sm_l2(c: &Config) -> u64 {
    let nvw = (c.workgroup / c.vws).max(1) as u64;
    let trips = (c.block_nnz as u64).div_ceil(nvw);
    let steps = trips.div_ceil(c.unroll as u64);
    slices(c.stride, c.tk)
        * (sm_l2_slice_fixed(c.tk, c.ti, c.workgroup) + steps * sm_l2_step(c.tk, c.vws, c.unroll))
}

/// The largest SM-L2 block (nonzeros, a multiple of the workgroup's virtual subgroups × UNROLL)
/// whose invocations run at most `budget` iterations with `c`'s other sizes; 0 when not even
/// one step fits.
pub fn sm_l2_max_block(c: &Config, budget: u64) -> usize {
    let nvw = (c.workgroup / c.vws).max(1) as u64;
    let per_slice = budget / slices(c.stride, c.tk);
    let steps = per_slice.saturating_sub(sm_l2_slice_fixed(c.tk, c.ti, c.workgroup))
        / sm_l2_step(c.tk, c.vws, c.unroll);
    (steps * c.unroll as u64 * nvw).min(usize::MAX as u64 / 2) as usize
}

/// `sddmm.sm_sm`: a `ti` × `tj` tile with up to `ti · tj` nonzeros (S dense there), slice by
/// slice, staging both tiles' rows.
pub fn sm_sm(stride: usize, tk: usize, ti: usize, tj: usize, vws: u32, workgroup: u32) -> u64 {
    let nvw = (workgroup / vws).max(1) as u64;
    let tk4 = (tk / 4) as u64;
    let stage =
        (ti as u64 * tk4).div_ceil(workgroup as u64) + (tj as u64 * tk4).div_ceil(workgroup as u64);
    let trips = (ti as u64 * tj as u64).div_ceil(nvw);
    let step = 1 + tk4.div_ceil(2 * vws as u64) + vsg_sum(vws);
    slices(stride, tk) * (1 + stage + trips * step)
}

/// The most loop iterations one invocation of `c`'s kernel runs.
pub fn per_invocation(c: &Config) -> u64 {
    match c.variant {
        Variant::Naive => naive(c.stride),
        Variant::Warp => warp(c.stride, c.vws, c.unroll),
        // A run is one row's nonzeros within one column panel of `tj`.
        Variant::RowRun => row_run(c.stride, c.block_nnz.min(c.tj.max(1)), c.vws),
        Variant::SmL2 => sm_l2(c),
        Variant::SmSm => sm_sm(c.stride, c.tk, c.ti, c.tj, c.vws, c.workgroup),
        Variant::Auto => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm_l2_config(stride: usize, tk: usize, ti: usize, block_nnz: usize) -> Config {
        Config {
            variant: Variant::SmL2,
            tj: 1000,
            tk,
            ti,
            block_nnz,
            vws: 2,
            unroll: 1,
            workgroup: 128,
            compress: true,
            transposed: false,
            subgroup_reduce: true,
            stride,
            build_on_device: false,
        }
    }

    #[test]
    fn counts_follow_the_shaders_loops() {
        // naive: K/4 vec4s.
        assert_eq!(naive(1024), 256);
        // warp, 8 lanes, K = 128: 32 vec4s, 2 a step per lane → 2 steps, + 3 reduction steps
        // + the two UNROLL loops.
        assert_eq!(warp(128, 8, 1), 2 + 2 + 3);
        // row_run, 8 lanes, K = 32 (1 vec4 each), 16 nonzeros: 2 steps of 1 + 8·2 + 8·4.
        assert_eq!(row_run(32, 16, 8), 1 + 2 * (1 + 16 + 32));
        // SM-L2, K = 64 in 2 slices of 32 floats, 4 rows, 128 nonzeros over 64 virtual
        // subgroups: per slice 1 + ⌈4·8/128⌉ = 2, and 2 steps of 1 + 2 + ⌈8/4⌉ + 1.
        assert_eq!(sm_l2(&sm_l2_config(64, 32, 4, 128)), 2 * (2 + 2 * 6));
        // SM-SM, one slice of 32, 8 × 8 tile over 64 virtual subgroups (vws 4, wg 256).
        assert_eq!(sm_sm(32, 32, 8, 8, 4, 256), 1 + 1 + 1 + (1 + 1 + 2));
    }

    #[test]
    fn the_largest_sm_l2_block_fits_and_one_more_step_does_not() {
        for (stride, tk, budget) in [(4096, 32, 32_767), (131_072, 8, 32_767), (64, 32, 100)] {
            let c = sm_l2_config(stride, tk, 21, 0);
            let best = sm_l2_max_block(&c, budget);
            let fits = |b: usize| sm_l2(&sm_l2_config(stride, tk, 21, b)) <= budget;
            if best > 0 {
                assert!(fits(best), "stride {stride}: {best}");
            }
            assert!(!fits(best + 64), "stride {stride}: {best} + a step");
        }
    }

    #[test]
    fn the_longest_row_run_fits_and_one_more_step_does_not() {
        for (stride, vws) in [(32, 8), (512, 8), (2048, 32)] {
            let len = row_run_max_len(stride, vws, 32_767);
            assert!(len > 0 && len.is_multiple_of(vws as usize));
            assert!(row_run(stride, len, vws) <= 32_767);
            assert!(row_run(stride, len + vws as usize, vws) > 32_767);
        }
        assert_eq!(row_run_max_len(2048, 32, 10), 0);
    }

    #[test]
    fn counts_grow_with_k_and_with_the_work_per_invocation() {
        assert!(naive(8192) > naive(1024));
        assert!(warp(8192, 8, 1) > warp(1024, 8, 1));
        assert!(row_run(128, 4096, 8) > row_run(128, 256, 8));
        assert!(sm_l2(&sm_l2_config(8192, 32, 8, 256)) > sm_l2(&sm_l2_config(1024, 32, 8, 256)));
        assert!(sm_sm(4096, 32, 128, 128, 4, 256) > sm_sm(4096, 32, 64, 64, 4, 256));
    }
}
