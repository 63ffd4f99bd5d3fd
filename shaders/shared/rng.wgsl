// PCG hash (O'Neill's RXS-M-XS output on an LCG step): a stateless 32-bit generator.
// The CPU twin is crate::gpu::shaders::pcg_hash; both must give the same bits.
fn pcg_hash(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Uniform in [0, 1) with 24 random bits; advances *state.
fn rand_f32(state: ptr<function, u32>) -> f32 {
    *state = pcg_hash(*state);
    return f32(*state >> 8u) * (1.0 / 16777216.0);
}
