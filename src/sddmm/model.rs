//! The cuSDDMM tile-size model: Tj = sqrt(L2 / (c·ρ)) (cut into equal panels), Tk = c·Tj·ρ
//! (auto-tuned over multiples of 32), Ti = workgroup memory / (4·Tk), and SM-SM above a
//! density threshold.

use crate::gpu::Caps;

/// Words per nonzero that the streamed sparse format costs (the paper's c; its COO is row,
/// column and value, 3): with 16-bit tile-relative indices a packed index, the value and the
/// position in CSR order that P is scattered to (3); uncompressed a local row, the column,
/// the value and the position (4).
pub fn format_cost(compress: bool) -> f64 {
    if compress {
        3.0
    } else {
        4.0
    }
}

/// Column-panel width from the model: Tj = sqrt(C / (c·ρ)), with C the cache (in floats)
/// that a Tj × Tk panel of B should fit, for a matrix of `n` columns. The panels are then
/// made equal: the count is whichever of ⌊n/Tj⌋ and ⌈n/Tj⌉ (at least 1) gives the model's
/// traffic, ∝ panels + (n/Tj)²/panels (A staged once per panel + S streamed once per
/// slice), its minimum, and Tj = ⌈n / count⌉. The paper rounds Tj up to a multiple of 5000
/// instead, which can leave a sliver of a last panel that stages its active rows of A again
/// for a few nonzeros.
///
/// The default C is the L2 ([`crate::Caps::l2_bytes`], 50 MB on Hopper), as in the paper.
pub fn panel_width(cache_bytes: u64, density: f64, c: f64, n: usize) -> usize {
    let n = n.max(1);
    let floats = cache_bytes as f64 / 4.0;
    let rho = density.max(1e-12);
    let tj = (floats / (c * rho)).sqrt().max(1.0);
    let x = n as f64 / tj;
    let traffic = |panels: f64| panels + x * x / panels;
    let (lo, hi) = (x.floor().max(1.0), x.ceil().max(1.0));
    let panels = if traffic(lo) <= traffic(hi) { lo } else { hi };
    n.div_ceil(panels as usize)
}

/// The model's k-slice width: Tk = c·Tj·ρ rounded to a multiple of `multiple` (32 or the
/// subgroup size), clamped to [multiple, padded K].
pub fn slice_width(tj: usize, density: f64, c: f64, multiple: usize, k_padded: usize) -> usize {
    let raw = c * tj as f64 * density;
    let m = multiple.max(8);
    let tk = ((raw / m as f64).round().max(1.0) as usize) * m;
    tk.min(k_padded.div_ceil(8) * 8).max(8)
}

/// Workgroup memory a tiled kernel aims to use: a twelfth of the adapter's per-workgroup
/// limit (4 KiB of NVIDIA's 48 KiB). The paper fills half an SM so two blocks co-reside; on
/// an H200 (SDDMM, NYTimes shape, K = 128) Ti = 8 rows (4 KiB) ran 2.3× faster than Ti = 32
/// and 1.5× faster than Ti = 4, since the SM-L2 loop is latency bound and needs many
/// resident workgroups.
pub fn tile_budget_bytes(caps: &Caps) -> u32 {
    (caps.max_workgroup_storage_bytes / 12).max(1024)
}

/// Active rows per workgroup for slice width `tk` within `budget` bytes of workgroup memory,
/// in [1, cap].
pub fn rows_per_block(budget: u32, tk: usize, cap: usize) -> usize {
    (budget as usize / (4 * tk)).clamp(1, cap)
}

/// Candidate k-slice widths for tuning: multiples of `multiple` up to padded K.
pub fn slice_candidates(k_padded: usize, multiple: usize) -> Vec<usize> {
    let m = multiple.max(8);
    let mut out: Vec<usize> = (1..)
        .map(|i| i * m)
        .take_while(|&t| t < k_padded)
        .filter(|t| t.is_power_of_two() || t % 32 == 0)
        .collect();
    out.push(k_padded.div_ceil(8) * 8);
    out.dedup();
    out
}

/// The virtual-subgroup width for a slice of `tk` floats: one ×2-unrolled vec4 pair per
/// lane per pass over 32 floats, at least 2 lanes (on the H200, NYTimes shape, K = 128, 4
/// lanes beat 8 by 1.2–1.3×: `warp` 4.91 vs 6.29 ms, SM-L2 6.47 vs 7.72 ms), a power of two
/// in [2, 32].
pub fn default_vws(tk: usize) -> u32 {
    let lanes = (tk / 32).clamp(2, 32) as u32;
    if lanes.is_power_of_two() {
        lanes
    } else {
        lanes.next_power_of_two() / 2
    }
}

/// Most vec4s of A one `row_run` lane holds in registers (the kernel's array length).
pub const ROW_RUN_MAX_REGS: usize = 16;

/// Default most nonzeros per row run: loading the row of A once costs well under 1% of the
/// run's gathers of B, and heavy rows still spread over many virtual subgroups. On the H200
/// (NYTimes shape, K = 128) the six fastest points of the row-run sweep all had 256.
pub const ROW_RUN_LEN: usize = 256;

/// Lanes per row run for a padded row of `stride` floats: 8 (one 128-byte row segment per
/// load across the lanes), fewer when the row is shorter, more when a lane would hold over
/// [`ROW_RUN_MAX_REGS`] vec4s; a power of two in [1, 32].
pub fn row_run_vws(stride: usize) -> u32 {
    let vec4s = (stride / 4).max(1);
    let floor_pow2 = |n: usize| 1usize << (usize::BITS - 1 - n.leading_zeros());
    let fewest = vec4s.div_ceil(ROW_RUN_MAX_REGS).next_power_of_two();
    8.min(floor_pow2(vec4s)).max(fewest).min(32) as u32
}

/// Column-panel width for row runs: the panel of B (`tj` rows of `stride` floats) takes half
/// of the cache, so it stays there while the panel's runs gather from it (the other half is
/// for what streams past: S, A and the output); then cut into equal panels of S's `ncols`.
pub fn row_run_panel_width(cache_bytes: u64, stride: usize, ncols: usize) -> usize {
    let ncols = ncols.max(1);
    let fit = ((cache_bytes / 2) as usize / (stride.max(1) * 4)).max(1);
    ncols.div_ceil(ncols.div_ceil(fit))
}

/// Workgroups an SM-L2 dispatch aims for at least: about four waves of an H200 (132 SMs ×
/// 8 resident workgroups of 256). Small matrices get smaller blocks rather than idle SMs.
pub const TARGET_BLOCKS: usize = 4096;

/// Most nonzeros one SM-L2 workgroup takes: `nnz / TARGET_BLOCKS`, clamped to between one
/// and 64 trips of the workgroup's virtual subgroups (heavier rows are split over blocks).
pub fn block_nonzeros(nnz: usize, workgroup: u32, vws: u32) -> usize {
    let per_trip = (workgroup / vws.max(1)).max(1) as usize;
    (nnz / TARGET_BLOCKS).clamp(per_trip, 64 * per_trip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_width_follows_the_paper() {
        let c = format_cost(true);
        let l2 = 50 << 20;
        // NYTimes shape streamed along its 300,000 rows: sqrt(13.1M floats / (3 · 0.226%))
        // ≈ 43,900, 6.83 panels → 7 equal panels.
        let nyt_rho = 69_679_427.0 / (300_000.0 * 102_660.0);
        assert_eq!(panel_width(l2, nyt_rho, c, 300_000), 42_858);
        // web-Google shape: the model's ≈ 848,000 is 1.08 panels: one panel, not a sliver.
        let google_rho = 5_105_039.0 / (916_428.0f64 * 916_428.0);
        assert_eq!(panel_width(l2, google_rho, c, 916_428), 916_428);
        // The paper's P100 setting (4 MB L2 as floats, c = 3) on NYTimes: ≈ 12,429, 8.3
        // panels of its 102,660 columns → 8.
        assert_eq!(panel_width(4 << 20, nyt_rho, 3.0, 102_660), 12_833);
        // Denser matrices get narrower panels; never wider than the matrix.
        assert!(panel_width(l2, 0.1, c, 75_000) < panel_width(l2, 0.01, c, 75_000));
        assert_eq!(panel_width(l2, 1e-9, c, 10), 10);
    }

    #[test]
    fn blocks_fill_the_device_without_growing_past_64_trips() {
        assert_eq!(block_nonzeros(70_000_000, 256, 4), 64 * 64);
        assert_eq!(block_nonzeros(746_316, 256, 4), 182);
        assert_eq!(block_nonzeros(100, 256, 4), 64);
        assert_eq!(block_nonzeros(0, 256, 0), 256);
    }

    #[test]
    fn slices_and_lanes_are_well_formed() {
        assert_eq!(slice_candidates(128, 32), vec![32, 64, 96, 128]);
        assert_eq!(slice_candidates(8, 32), vec![8]);
        for tk in [8, 32, 100, 128, 512, 4096] {
            let v = default_vws(tk);
            assert!(v.is_power_of_two() && (2..=32).contains(&v));
        }
        let tk = slice_width(2_560, 0.0033, 2.0, 32, 128);
        assert!(tk.is_multiple_of(8) && (8..=128).contains(&tk));
    }

    #[test]
    fn row_run_lanes_keep_a_within_the_register_array() {
        // stride (padded K) → lanes: 8 by default, fewer for short rows, more for long ones.
        for (stride, want) in [(8, 2), (16, 4), (32, 8), (128, 8), (512, 8), (1024, 16)] {
            assert_eq!(row_run_vws(stride), want, "stride {stride}");
        }
        // NYTimes shape, 50 MB L2: one panel at K = 32, three at 128, nine at 512.
        let l2 = 50 << 20;
        assert_eq!(row_run_panel_width(l2, 32, 102_660), 102_660);
        assert_eq!(row_run_panel_width(l2, 128, 102_660), 34_220);
        assert_eq!(
            102_660usize.div_ceil(row_run_panel_width(l2, 512, 102_660)),
            9
        );
        for stride in (8..=2048).step_by(8) {
            let v = row_run_vws(stride) as usize;
            assert!(v.is_power_of_two() && v <= 32);
            assert!(
                (stride / 4).div_ceil(v) <= ROW_RUN_MAX_REGS,
                "stride {stride}"
            );
        }
    }
}
