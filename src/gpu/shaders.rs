//! Every WGSL file under `shaders/`, embedded in the binary by name (its path without
//! `.wgsl`). `tests/shaders_validate.rs` checks this table lists every file on disk.

macro_rules! shader_table {
    ($($name:literal),* $(,)?) => {
        /// (name, source) of every shader.
        pub const ALL: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../shaders/", $name, ".wgsl")))),*
        ];
    };
}

shader_table!(
    "shared/reduce",
    "shared/atomic_f32",
    "shared/atomic_f32_wg",
    "shared/fixed_wg",
    "shared/half",
    "shared/rng",
    "shared/wg_sum",
    "runtime/copy",
    "runtime/copy_words",
    "runtime/read",
    "runtime/residency",
    "runtime/gate",
    "runtime/empty",
    "runtime/scan_blocks",
    "runtime/scan_add",
    "runtime/spin",
    "runtime/loop_cap",
    "runtime/scatter_hash",
    "runtime/scatter",
    "runtime/scatter_wg",
    "selftest/reduce",
    "selftest/atomic",
    "selftest/half_rng",
    "sddmm/expand_rows",
    "sddmm/naive",
    "sddmm/warp",
    "sddmm/row_run",
    "sddmm/sm_l2",
    "sddmm/sm_sm",
    "sddmm/slice_out",
    "sddmm/tile_key",
    "sddmm/tile_count",
    "sddmm/tile_place",
    "fused/csr_row",
    "fused/csr_row4",
    "fused/finish",
    "fused/long_dot",
    "fused/run_sum",
    "fused/sparse",
    "fused/dense",
    "fused/spmv",
    "fused/gemv",
    "fused/gemv_t",
    "fused/scale",
    "fused/axpy",
    "fused/reduce_parts",
    "fused/dot",
    "fused/cg_step",
    "fused/logistic",
    "fused/long_rows",
    "fused/sorted",
    "fused/stream",
    "fused/stream_units",
    "fused/chain_sum",
    "fused/split_dots",
    "fused/split",
    "fused/tron_scalars",
    "fused/permute",
    "fused/gather_rows",
    "fused/gather_chunks",
    "fused/gather_tiles",
    "mf/storage",
    "mf/vec_half",
    "mf/vec",
    "mf/sgd",
    "mf/hogwild",
    "mf/wavefront",
    "mf/rmse",
    "mf/finite",
    "spdnn/layer",
    "spdnn/compact",
    "spdnn/reset",
    "spdnn/sliced",
    "spdnn/select",
    "spdnn/rejoin",
    "spdnn/thesis_multiply",
    "spdnn/thesis_count",
    "spdnn/thesis_total",
    "spdnn/thesis_flush",
    "wide/model",
    "wide/config",
    "wide/linear",
    "wide/fm",
    "wide/loss_logistic",
    "wide/loss_hinge",
    "wide/loss_squared",
    "wide/flow",
    "wide/flow_grid",
    "wide/flow_apply",
    "wide/apply",
    "wide/stage_common",
    "wide/stage_aggregate",
    "wide/stage_loss",
    "wide/stage_grad",
    "wide/metrics",
);

/// The source of shader `name`, if it exists.
pub fn source(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Shaders that are entry points (a `@compute` function), not libraries for `#import`.
pub fn kernels() -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .filter(|(_, source)| source.contains("@compute"))
        .map(|(n, _)| *n)
}

/// CPU twin of `pcg_hash` in `shared/rng.wgsl`.
pub fn pcg_hash(v: u32) -> u32 {
    let state = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}
