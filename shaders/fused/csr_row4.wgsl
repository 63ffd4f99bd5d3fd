// One lane's share of a CSR row's dot product with the vector `y`, UNROLL_ROW = 4 entries per
// trip (independent loads and sums): entries lane, lane + VS, … of the row (0 when `ok` is
// false), the row's remainder one at a time. A trip waits on memory once instead of once per
// entry, so a lane keeps several loads of values, indices and gathered y in flight. The
// importing kernel declares `row_ptr`, `vals`, `y`, the override VS, and `col_at(i)`, entry
// i's column (32-bit indices, or the 16-bit packing of fused/split_dots).
const UNROLL_ROW: u32 = 4u;

fn csr_row_partial4(row: u32, lane: u32, ok: bool) -> f32 {
    var s0 = 0.0;
    var s1 = 0.0;
    var s2 = 0.0;
    var s3 = 0.0;
    if ok {
        let end = row_ptr[row + 1u];
        var i = row_ptr[row] + lane;
        // i + 3·VS < end: all four entries are in the row (the entries bound fit one binding,
        // so the sums stay below 2^32).
        for (; i + 3u * VS < end; i += UNROLL_ROW * VS) {
            let x0 = vals[i];
            let x1 = vals[i + VS];
            let x2 = vals[i + 2u * VS];
            let x3 = vals[i + 3u * VS];
            s0 += x0 * y[col_at(i)];
            s1 += x1 * y[col_at(i + VS)];
            s2 += x2 * y[col_at(i + 2u * VS)];
            s3 += x3 * y[col_at(i + 3u * VS)];
        }
        for (; i < end; i += VS) {
            s0 += vals[i] * y[col_at(i)];
        }
    }
    return (s0 + s1) + (s2 + s3);
}
