//! How a run's categories are judged against the truth (a file, the CPU twin or the first
//! run): exact, or but for rows within f32 rounding of the threshold.

/// A row whose twin margin (see `cpu::infer_with_margins`) is at most this times the layer
/// count can survive or die in f32 arithmetic depending on the order of its sums.
pub(super) const TIE_PER_LAYER: f64 = 1e-6;

/// The verdict on `got` against the truth, both numbered from the run's first input row:
/// (text, ok, rows that differ only within f32 rounding of the threshold). Rows in the
/// text and the tie rows are 1-based in the whole input (`first` added).
pub(super) fn judge(
    truth: &Option<(String, Vec<u32>)>,
    margins: Option<&[f64]>,
    tie: f64,
    first: usize,
    got: &[u32],
) -> (String, bool, Vec<u32>) {
    let Some((from, want)) = truth else {
        return ("not checked".to_string(), true, Vec::new());
    };
    if want == got {
        return (format!("categories match ({from})"), true, Vec::new());
    }
    let differ = symmetric_difference(want, got);
    let all_ties = margins.is_some_and(|m| differ.iter().all(|&r| m[r as usize] <= tie));
    if !all_ties {
        return (mismatch(from, want, got, first), false, Vec::new());
    }
    let ties: Vec<u32> = differ.iter().map(|r| r + 1 + first as u32).collect();
    (
        format!(
            "categories match ({from}) but for {} row(s) within f32 rounding of the threshold \
             (f64 margin ≤ {tie:.1e}): {:?}",
            ties.len(),
            &ties[..ties.len().min(5)]
        ),
        true,
        ties,
    )
}

/// Rows in exactly one of two increasing lists.
fn symmetric_difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    use std::collections::BTreeSet;
    let a: BTreeSet<u32> = a.iter().copied().collect();
    let b: BTreeSet<u32> = b.iter().copied().collect();
    a.symmetric_difference(&b).copied().collect()
}

/// A report of how `got` differs from `want`: counts and the first rows each way (1-based
/// in the whole input: `first` added).
fn mismatch(from: &str, want: &[u32], got: &[u32], first: usize) -> String {
    use std::collections::BTreeSet;
    let w: BTreeSet<u32> = want.iter().copied().collect();
    let g: BTreeSet<u32> = got.iter().copied().collect();
    let one = 1 + first as u32;
    let missing: Vec<u32> = w.difference(&g).take(5).map(|r| r + one).collect();
    let extra: Vec<u32> = g.difference(&w).take(5).map(|r| r + one).collect();
    format!(
        "categories MISMATCH against {from}: {} expected, {} found; {} missing (first {:?}), {} extra (first {:?})",
        want.len(),
        got.len(),
        w.difference(&g).count(),
        missing,
        g.difference(&w).count(),
        extra
    )
}
