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
