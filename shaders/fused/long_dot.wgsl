// A long row's dot product from its chunk partials (the folded long-row path, fused/sparse and
// fused/sorted with LONG): `code` packs the first partial (low 26 bits) and the count less
// one (high 6 bits, so at most 64 chunks a row). Summed in chunk order, so every chunk of a
// row scales its entries by the same dot product. The importing kernel declares `ldots`.
fn long_dot(code: u32) -> f32 {
    let first = code & 0x3ffffffu;
    let count = (code >> 26u) + 1u;
    var s = 0.0;
    for (var j = 0u; j < count; j++) {
        s += ldots[first + j];
    }
    return s;
}
