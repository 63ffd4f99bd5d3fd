//! The launch model of Ashari et al. §3.3: the vector size VS from the mean row length
//! (Eq. 4, sparse; [`fused_vs`] its threshold refitted for the fused kernel) or the row length
//! per lane (Eq. 6, dense), the workgroup size that keeps the most invocations resident, and
//! the rows per vector C that spreads the rows over every resident vector (Eq. 5; for the
//! sparse row kernel weighed on X's own rows by [`super::schedule`]).
//!
//! wgpu reports neither the number of compute units nor their resident invocations or
//! workgroup memory, so [`Residency`] takes them from the environment, else from the
//! adapter's calibration (`wgsparse calibrate`, [`crate::gpu::calibrate`]), else from
//! defaults for Hopper on discrete GPUs and one unit per CPU core otherwise.

/// Most elements a dense-kernel lane holds in registers (the shader's `TL_MAX`).
pub const TL_MAX: u32 = 16;

/// Lanes per row of the dense kernel at 8 < n ≤ 32 ([`dense_tl_vs`]).
pub const DENSE_SMALL_VS: u32 = 8;

pub use crate::gpu::Residency;

/// Eq. 4: lanes per row from the mean row length μ = nnz/m.
pub fn sparse_vs(mu: f64) -> u32 {
    if mu > 32.0 {
        return 32;
    }
    for i in (1..=4).rev() {
        let lo = (1u32 << i) as f64;
        if mu > lo {
            return 1 << i;
        }
    }
    1
}

/// How many times the mean row length the fused kernel's VS rule reads ([`fused_vs`]).
pub const FUSED_VS_ROW_SCALE: f64 = 4.0;

/// Lanes per row of the fused kernel (and its two-pass form): the largest power of two up to
/// [`FUSED_VS_ROW_SCALE`]·μ, from 1 to 32 — Eq. 4 with the threshold four times lower. Fitted
/// to the sweeps of power-law X (500k rows, density 0.01) on an H100 (BENCHMARKS.md,
/// twenty-fourth measurements): the fastest VS was 8 at μ = 2 and 32 at μ = 10.24 and 40.96,
/// where Eq. 4 gives 1, 8 and 32 and left the model 168% and 68% behind the best at the
/// first two. Most rows there are far shorter than μ (the median 0, 2 and 9 entries), so
/// the vector's width is set by the long rows that hold most entries, not the mean.
pub fn fused_vs(mu: f64) -> u32 {
    let target = FUSED_VS_ROW_SCALE * mu;
    let mut vs = 1;
    while vs < 32 && (2 * vs) as f64 <= target {
        vs *= 2;
    }
    vs
}

/// Eq. 6: lanes per row when each holds `tl` elements of a row of `n`, with `bs` the
/// workgroup size used when a row needs more than 32 lanes.
pub fn dense_vs(n: usize, tl: u32, bs: u32) -> u32 {
    let per = n as f64 / tl as f64;
    if per > 32.0 {
        return bs;
    }
    for i in 1..=5 {
        if per <= (1u32 << i) as f64 {
            return if per > (1u32 << (i - 1)) as f64 {
                1 << i
            } else {
                1 << (i - 1)
            };
        }
    }
    32
}

/// Dense TL and VS (Eq. 6): TL first, the fewest elements per lane that let a row fit one
/// subgroup-sized vector of ≤ 32 lanes; when even TL_MAX does not, the fewest lanes (a power
/// of two, up to `max_wg`) that hold a row at TL_MAX each. 8 < n ≤ 32 (HIGGS: 28): vectors
/// of [`DENSE_SMALL_VS`] lanes of ⌈n/8⌉ elements, so a subgroup takes several rows — the
/// paper's one element per lane (VS 32 at n = 28) spends 5 shuffle rounds over 32 lanes per
/// row (160 lane-shuffles) against 3 over 8 (24), and 8 lanes still read a row's 32-byte
/// sectors whole. n ≤ 8: one element per lane.
///
/// Past 32 lanes the paper gives a row the whole workgroup (BS lanes). At n = 1,000 and
/// workgroups of 512 that was 128 lanes of 8, which ran 29% behind 64 lanes of 16 in the
/// H200 sweep of 500k × 1,000 (0.6857 against 0.5300 ms at Eq. 5's C; BENCHMARKS.md,
/// twenty-fifth measurements): half the lanes to reduce over per row.
pub fn dense_tl_vs(n: usize, max_wg: u32) -> Option<(u32, u32)> {
    if n <= 32 {
        if n > DENSE_SMALL_VS as usize {
            return Some((n.div_ceil(DENSE_SMALL_VS as usize) as u32, DENSE_SMALL_VS));
        }
        return Some((1, dense_vs(n, 1, 32).max(1)));
    }
    let tl0 = n.div_ceil(32) as u32;
    if tl0 <= TL_MAX {
        let vs = dense_vs(n, tl0, 32);
        return Some((n.div_ceil(vs as usize) as u32, vs));
    }
    let vs = n.div_ceil(TL_MAX as usize).next_power_of_two();
    (vs <= max_wg as usize).then(|| (n.div_ceil(vs) as u32, vs as u32))
}

/// The dense kernel's workgroup size at n ≤ 32 (the paper's BS): there a workgroup of
/// 8-lane vectors takes many short rows, and in the H200 sweep of 500k × 32 larger
/// workgroups ran 6.5–57% behind 128 (1,024 ran 46% behind on an H100).
pub const DENSE_SMALL_BS: u32 = 128;

/// The dense kernel's workgroup size at n > 32: in the H200 sweeps of 500k × 200, 1,000 and
/// 2,000 (BENCHMARKS.md, twenty-fifth measurements; the H100's of the twenty-fourth agree),
/// workgroups of 512 at the model's VS and Eq. 5's C were the fastest or within 1.5% of it,
/// and the paper's 128 ran 11–20% behind.
pub const DENSE_BS: u32 = 512;

/// The dense kernel's workgroup size when the caller gives none: [`DENSE_SMALL_BS`] at
/// n ≤ 32, else [`DENSE_BS`].
pub fn dense_workgroup(n: usize) -> u32 {
    if n <= 32 {
        DENSE_SMALL_BS
    } else {
        DENSE_BS
    }
}

/// Eq. 5 and the grid: with `resident` workgroups of `nv` vectors, C = ⌈m / (resident·nv)⌉
/// rows per vector, then the fewest workgroups that cover m rows at C per vector (never
/// more than `max_groups`, C rising instead).
pub fn rows_per_vector(m: usize, nv: u32, resident: u32, max_groups: u32) -> (u32, u32) {
    let vectors = (resident.max(1) as usize) * nv as usize;
    let mut c = m.div_ceil(vectors).max(1);
    let mut groups = m.div_ceil(c * nv as usize).max(1);
    if groups > max_groups as usize {
        c = m.div_ceil(max_groups as usize * nv as usize);
        groups = m.div_ceil(c * nv as usize).max(1);
    }
    (c as u32, groups as u32)
}

/// The workgroup size (power of two, 32 …`max`) that keeps the most invocations resident
/// when a workgroup of `wg` invocations needs `shared(wg)` bytes. Among sizes that tie, the
/// smallest of at least `least` invocations, else the largest (fewer workgroups, fewer
/// global adds).
pub fn best_workgroup(r: &Residency, max: u32, least: u32, shared: impl Fn(u32) -> u32) -> u32 {
    let mut sizes = vec![];
    let mut wg = 32;
    while wg <= max.min(1024) {
        sizes.push((wg as u64 * r.groups_resident(wg, shared(wg)) as u64, wg));
        wg *= 2;
    }
    let most = sizes.iter().map(|s| s.0).max().unwrap_or(0);
    let ties = sizes.iter().filter(|s| s.0 == most).map(|s| s.1);
    ties.clone()
        .filter(|&wg| wg >= least)
        .min()
        .or(ties.max())
        .unwrap_or(32)
}

/// Vectors per workgroup the fused row kernel's workgroup size aims for ([`best_workgroup`]'s
/// `least` = this × VS). In the H200 sweeps of power-law X (BENCHMARKS.md, twenty-fifth
/// measurements), where workgroup memory left the size open (n = 200 and 1,024) and VS ≥ 8,
/// 32 vectors a workgroup were the fastest or within 4% of it. At VS 8 and n = 200, 1,024
/// invocations (128 vectors) ran 13.5% behind; at VS 32 and n = 1,024, 16 vectors ran 17%
/// behind.
pub const FUSED_VECTORS: u32 = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq4_matches_the_paper() {
        // 500k × 1k at 1%: μ = 10.24 → VS = 8 (Section 4.3).
        assert_eq!(sparse_vs(10.24), 8);
        assert_eq!(sparse_vs(33.0), 32);
        assert_eq!(sparse_vs(32.0), 16);
        assert_eq!(sparse_vs(2.0), 1);
        assert_eq!(sparse_vs(2.5), 2);
        assert_eq!(sparse_vs(28.24), 16); // KDD2010
    }

    #[test]
    fn fused_vs_is_eq4_at_four_times_the_mean() {
        // The sweeps' best: μ = 2 → 8, 10.24 → 32, 40.96 → 32.
        assert_eq!(fused_vs(2.0), 8);
        assert_eq!(fused_vs(10.24), 32);
        assert_eq!(fused_vs(40.96), 32);
        assert_eq!(fused_vs(1.99), 4);
        assert_eq!(fused_vs(0.1), 1);
        assert_eq!(fused_vs(0.0), 1);
        assert_eq!(fused_vs(5.0), 16);
        for mu in [0.3, 0.7, 1.5, 3.0, 6.5, 9.0, 100.0] {
            // Never fewer lanes than Eq. 4, never more than a subgroup of 32.
            assert!(fused_vs(mu) >= sparse_vs(mu) && fused_vs(mu) <= 32, "{mu}");
        }
    }

    #[test]
    fn eq6_matches_the_paper() {
        // n = 200, TL = 7 → n/TL ≈ 28.6 → VS = 32; TL = 2 → 100 > 32 → VS = BS.
        assert_eq!(dense_vs(200, 7, 128), 32);
        assert_eq!(dense_vs(200, 2, 128), 128);
        assert_eq!(dense_tl_vs(200, 1024), Some((7, 32)));
        // n ≤ 32: Eq. 6 gives one element over 32 lanes; the model takes 8 lanes of 4.
        assert_eq!(dense_vs(28, 1, 128), 32);
        assert_eq!(dense_tl_vs(28, 1024), Some((4, 8)));
        assert_eq!(dense_tl_vs(7, 1024), Some((1, 8)));
        // Past 32 lanes: the fewest lanes of at most TL_MAX elements.
        assert_eq!(dense_tl_vs(512, 1024), Some((16, 32)));
        assert_eq!(dense_tl_vs(600, 1024), Some((10, 64)));
        assert_eq!(dense_tl_vs(1000, 1024), Some((16, 64)));
        assert_eq!(dense_tl_vs(2000, 1024), Some((16, 128)));
        assert_eq!(dense_tl_vs(4000, 1024), Some((16, 256)));
        assert_eq!(dense_tl_vs(16_384, 1024), Some((16, 1024)));
        assert_eq!(dense_tl_vs(16_385, 1024), None);
        assert_eq!(dense_tl_vs(1_000_000, 1024), None);
    }

    #[test]
    fn dense_workgroups_are_small_only_for_short_rows() {
        assert_eq!(dense_workgroup(28), DENSE_SMALL_BS);
        assert_eq!(dense_workgroup(32), DENSE_SMALL_BS);
        assert_eq!(dense_workgroup(33), DENSE_BS);
        assert_eq!(dense_workgroup(2000), DENSE_BS);
    }

    #[test]
    fn workgroups_aim_for_the_least_size_among_the_most_resident() {
        // Hopper-like: 2,048 invocations, 48 KiB and 32 workgroups a unit.
        let r = Residency {
            units: 132,
            threads_per_unit: 2048,
            shared_per_unit: 48 * 1024,
            groups_per_unit: 32,
            shared_reserved: 0,
        };
        let small = |_| 800;
        // 64 … 1,024 keep 2,048 invocations resident: the least of at least 256 is taken.
        assert_eq!(best_workgroup(&r, 1024, 8 * FUSED_VECTORS, small), 256);
        assert_eq!(best_workgroup(&r, 1024, 32 * FUSED_VECTORS, small), 1024);
        // No tie at least that large: the largest.
        assert_eq!(best_workgroup(&r, 1024, u32::MAX, small), 1024);
        assert_eq!(best_workgroup(&r, 512, 32 * FUSED_VECTORS, small), 512);
        // A 16 KiB copy of w: 3 workgroups a unit, so only 1,024 keeps 2,048 resident.
        assert_eq!(
            best_workgroup(&r, 1024, 8 * FUSED_VECTORS, |_| 16 * 1024),
            1024
        );
    }

    #[test]
    fn eq5_matches_the_paper() {
        // 28 resident blocks of 80 vectors on 500k rows: 223 rows per vector.
        assert_eq!(rows_per_vector(500_000, 80, 28, 65_535).0, 224);
    }
}
