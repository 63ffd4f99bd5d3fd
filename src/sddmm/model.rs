//! The cuSDDMM tile-size model: Tj = sqrt(L2 / (c·ρ)), Tk = c·Tj·ρ (auto-tuned over
//! multiples of 32), Ti = workgroup memory / (4·Tk), and SM-SM above a density threshold.

use crate::gpu::Caps;

/// Floats per nonzero that the streamed sparse format costs (the paper's c): COO with
/// 16-bit tile-relative indices packs row and column into one word (value + index = 2);
/// plain COO stores row, column and value (3).
pub fn format_cost(compress: bool) -> f64 {
    if compress {
        2.0
    } else {
        3.0
    }
}

/// Column-panel width from the model, rounded up to a multiple of `round` (the paper rounds
/// to 5000), at least `round`. `l2_bytes` is the last-level cache the panel of B must fit.
pub fn panel_width(l2_bytes: u64, density: f64, c: f64, round: usize) -> usize {
    let l2_floats = l2_bytes as f64 / 4.0;
    let rho = density.max(1e-12);
    let tj = (l2_floats / (c * rho)).sqrt();
    let round = round.max(1);
    let tj = (tj / round as f64).ceil().max(1.0) as usize * round;
    tj.max(round)
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

/// The virtual-subgroup width for a slice of `tk` floats: two ×2-unrolled vec4 pairs per
/// lane (on the H200 at K = 128, 8 lanes beat 16 by 1.5×–2×: more loads in flight per lane),
/// a power of two in [1, 32].
pub fn default_vws(tk: usize) -> u32 {
    let lanes = (tk / 16).clamp(1, 32) as u32;
    if lanes.is_power_of_two() {
        lanes
    } else {
        lanes.next_power_of_two() / 2
    }
}
