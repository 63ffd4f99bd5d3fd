// One lane's share of a CSR row's dot product with the vector `y`, UNROLL_ROW = 4 entries per
// trip (independent loads and sums): entries lane, lane + VS, … of the row (0 when `ok` is
// false). Every trip loads four entries, those past the row's end clamped onto its last entry
// (loaded, never summed: a select, so an Inf or NaN there cannot leak), so a row's tail takes
// one more trip instead of a loop of single entries each waiting on its index, then on y. A
// lane keeps its trip's loads of values, indices and gathered y in flight at once. The
// importing kernel declares `row_ptr`, `vals`, `y`, the override VS, and `col_at(i)`, entry
// i's column (32-bit indices, or the 16-bit packing of fused/split_dots).
const UNROLL_ROW: u32 = 4u;

fn csr_row_partial4(row: u32, lane: u32, ok: bool) -> f32 {
    var s = vec4<f32>(0.0);
    if ok {
        let end = row_ptr[row + 1u];
        // The loop runs only when the row holds an entry, so end ≥ 1 there; the entries bound
        // fits one binding, so i + 3·VS stays below 2^32.
        let last = vec4<u32>(end - 1u);
        let stride = vec4<u32>(0u, VS, 2u * VS, 3u * VS);
        for (var i = row_ptr[row] + lane; i < end; i += UNROLL_ROW * VS) {
            let j = vec4<u32>(i) + stride;
            let k = min(j, last);
            let x = vec4<f32>(vals[k.x], vals[k.y], vals[k.z], vals[k.w]);
            let g = vec4<f32>(y[col_at(k.x)], y[col_at(k.y)], y[col_at(k.z)], y[col_at(k.w)]);
            s += select(vec4<f32>(0.0), x * g, j < vec4<u32>(end));
        }
    }
    return (s.x + s.y) + (s.z + s.w);
}
