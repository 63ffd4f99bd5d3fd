//! Host metrics: exact AUC (ties counted half) and label conversion.

/// Labels as ±1: positive values become +1, all others (0, −1, …) −1.
pub fn labels_pm1(labels: &[f32]) -> Vec<f32> {
    labels
        .iter()
        .map(|&l| if l > 0.0 { 1.0 } else { -1.0 })
        .collect()
}

/// Exact area under the ROC curve of `scores` against labels (> 0 positive): the probability
/// that a random positive scores above a random negative, ties counting one half. `None`
/// when one class is absent or a score is NaN.
pub fn auc(scores: &[f32], labels: &[f32]) -> Option<f64> {
    if scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let (mut pos, mut neg) = (0u64, 0u64);
    // Σ over positives of (negatives strictly below + ½ negatives tied).
    let mut below = 0.0f64;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        let (mut p, mut n) = (0u64, 0u64);
        while j < order.len() && scores[order[j]] == scores[order[i]] {
            if labels[order[j]] > 0.0 {
                p += 1;
            } else {
                n += 1;
            }
            j += 1;
        }
        below += p as f64 * (neg as f64 + 0.5 * n as f64);
        pos += p;
        neg += n;
        i = j;
    }
    if pos == 0 || neg == 0 {
        return None;
    }
    Some(below / (pos as f64 * neg as f64))
}

/// AUC from per-class histograms of scores over the same ordered bins: pairs in different
/// bins are ordered exactly, pairs within one bin count one half. Returns (AUC, error
/// bound): the exact AUC of the binned scores lies within ± ½ Σ_b pos_b·neg_b / (P·N) of
/// this value. `None` when a class is empty.
pub fn auc_from_histograms(neg: &[u32], pos: &[u32]) -> Option<(f64, f64)> {
    let p: f64 = pos.iter().map(|&c| c as f64).sum();
    let n: f64 = neg.iter().map(|&c| c as f64).sum();
    if p == 0.0 || n == 0.0 {
        return None;
    }
    let (mut below, mut num, mut tied) = (0.0f64, 0.0f64, 0.0f64);
    for (&nb, &pb) in neg.iter().zip(pos) {
        let (nb, pb) = (nb as f64, pb as f64);
        num += pb * (below + 0.5 * nb);
        tied += pb * nb;
        below += nb;
    }
    Some((num / (p * n), 0.5 * tied / (p * n)))
}
