// The scatter probes' parameters and word sequence (runtime/scatter, runtime/scatter_wg).

struct ScatterParams {
    count: u32,
    stride: u32,
    mask: u32,
    seed: u32,
    // runtime/scatter_wg: 1 adds the workgroup's words to the global target at the end (the
    // checked run), 0 leaves them (the timed runs: the probe's rate is the workgroup's).
    flush: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// A 32-bit integer hash (the "lowbias32" mix): adjacent inputs land far apart.
fn mix32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// Operation i's word: runs of `run` consecutive words at hashed starts, within the mask.
fn scatter_word(i: u32, run: u32) -> u32 {
    return ((mix32((i / run) ^ params.seed) * run) + i % run) & params.mask;
}
