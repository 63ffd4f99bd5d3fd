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

/// Column-panel width from the model, Tj = sqrt(C / (c·ρ)) with C the cache (in floats)
/// that one panel of B should fit: rounded up to a multiple of 5000 (as the paper does)
/// when above 5000, else to a multiple of 256.
///
/// The paper takes C = L2 (4 MB on a P100). On an H200 the 50 MB L2 holds the whole B of
/// every suite matrix, and the measured optimum moved to the per-SM L1: a sweep put the best
/// Tj at 2,492 on the Enron shape (ρ = 0.33%) and 60,000 on web-Google (ρ = 6.1e-6), both
/// C ≈ 165–175 KiB with c = 2. So the default C is [`crate::Caps::l1_bytes`].
pub fn panel_width(cache_bytes: u64, density: f64, c: f64) -> usize {
    let floats = cache_bytes as f64 / 4.0;
    let rho = density.max(1e-12);
    let tj = (floats / (c * rho)).sqrt().min(u32::MAX as f64);
    let round = if tj > 5000.0 { 5000.0 } else { 256.0 };
    ((tj / round).ceil().max(1.0) * round) as usize
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_width_lands_on_the_measured_optima() {
        // The H200 sweep optima: Enron shape 2,492; web-Google shape 60,000 (see panel_width).
        let c = format_cost(true);
        let enron = panel_width(168 << 10, 3_710_420.0 / (39_861.0 * 28_102.0), c);
        assert!((2_300..=2_800).contains(&enron), "{enron}");
        let google = panel_width(168 << 10, 5_105_039.0 / (916_428.0f64 * 916_428.0), c);
        assert_eq!(google, 60_000);
        // The paper's P100 setting (4 MB L2 as floats, c = 3) on NYTimes: ≈12,429 → 15,000.
        let nyt = panel_width(4 << 20, 69_679_427.0 / (300_000.0 * 102_660.0), 3.0);
        assert_eq!(nyt, 15_000);
    }

    #[test]
    fn slices_and_lanes_are_well_formed() {
        assert_eq!(slice_candidates(128, 32), vec![32, 64, 96, 128]);
        assert_eq!(slice_candidates(8, 32), vec![8]);
        for tk in [8, 32, 100, 128, 512, 4096] {
            let v = default_vws(tk);
            assert!(v.is_power_of_two() && v <= 32);
        }
        let tk = slice_width(2_560, 0.0033, 2.0, 32, 128);
        assert!(tk.is_multiple_of(8) && (8..=128).contains(&tk));
    }
}
