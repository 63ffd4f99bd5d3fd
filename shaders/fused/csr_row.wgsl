// One lane's share of a CSR row's dot product with the vector `y`: Σ vals[i]·y[col_idx[i]]
// over every VS-th entry of the row from `lane` (0 when `ok` is false, a row past m). The
// importing kernel declares `row_ptr`, `col_idx`, `vals` and `y`, and the override VS.
fn csr_row_partial(row: u32, lane: u32, ok: bool) -> f32 {
    var s = 0.0;
    if ok {
        for (var i = row_ptr[row] + lane; i < row_ptr[row + 1u]; i += VS) {
            s += vals[i] * y[col_idx[i]];
        }
    }
    return s;
}
