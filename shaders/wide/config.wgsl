// The engine's uniform block, shared by the flow, stage and apply kernels (its Rust twin is
// `wide::engine::Config`; same field order, 64 bytes).
struct Config {
    n_samples: u32,
    chunk: u32,
    bias_index: u32,
    row_off: u32,
    seg_ptr_off: u32,
    seg_feat_off: u32,
    seg_edge_off: u32,
    label_off: u32,
    // Step size of the parameters (async), and the gradient scale 1/batch when the schedule
    // names no mini-batch size.
    lr: f32,
    inv_batch: f32,
    // Async: features 0 .. scaled take their step times `scale[j]`, the bias times
    // `scale[scaled]` (see `wide::plan::async_scale`); the others take it whole.
    scaled: u32,
    // L2 regularization: every sample's loss gains (λ/2) Σ_{j in it} ‖θ_j‖² (not the bias).
    l2: f32,
    // Async: features cold .. are each expected in at most one sample in flight
    // (`wide::plan::cold_from`; ≥ scaled): PLAIN_WRITES writes them without atomics.
    cold: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
