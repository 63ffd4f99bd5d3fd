// Library for the tiled SDDMM kernels: accumulating k-slice partial sums into `out` (CSR
// order through `perm`, offset by `out_base`). Each nonzero is owned by one virtual subgroup per slice, so no
// atomics are needed: the owner adds its partial to what earlier slices left and, on the last
// slice, multiplies by S_ij once. The importing kernel declares `perm`, `vals` and `out`.
fn store_partial(e: u32, out_base: u32, slice: u32, n_slices: u32, part: f32) {
    let o = out_base + perm[e];
    var acc = part;
    if slice > 0u {
        acc += out[o];
    }
    if slice + 1u == n_slices {
        acc *= vals[e];
    }
    out[o] = acc;
}
