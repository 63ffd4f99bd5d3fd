// spdnn.thesis_flush: the thesis's flush(Y_out, B_buffer): each non-empty row s of the dense
// batch buffer becomes list row d = rows_base + fpos[s] of the sparse output: its id
// (ids_in[b0 + s]), its range ptr_out[d]..ptr_out[d + 1] (from nnz_base + off[s]), and its
// nonzeros in increasing column order (a workgroup scan over each WG columns), so every
// output row is sorted. With by_id ≠ 0 the range is also written at the id (obeg/oend, for
// an output read by id as the next layer's right operand). One workgroup per batch row.
override WG: u32 = 256u;

struct Params {
    b0: u32,
    rows: u32,
    width: u32,
    rows_base: u32,
    nnz_base: u32,
    by_id: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> buf: array<f32>;
@group(0) @binding(2) var<storage, read> cnt: array<u32>;
@group(0) @binding(3) var<storage, read> off: array<u32>;
@group(0) @binding(4) var<storage, read> fpos: array<u32>;
@group(0) @binding(5) var<storage, read> ids_in: array<u32>;
@group(0) @binding(6) var<storage, read_write> ids_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> ptr_out: array<u32>;
@group(0) @binding(8) var<storage, read_write> col_out: array<u32>;
@group(0) @binding(9) var<storage, read_write> val_out: array<f32>;
@group(0) @binding(10) var<storage, read_write> obeg: array<u32>;
@group(0) @binding(11) var<storage, read_write> oend: array<u32>;

var<workgroup> wg_live: u32;
var<workgroup> scan: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = wid.y * nwg.x + wid.x;
    if (s >= params.rows) {
        return;
    }
    if (lid == 0u) {
        wg_live = cnt[s];
    }
    if (workgroupUniformLoad(&wg_live) == 0u) {
        return;
    }
    let d = params.rows_base + fpos[s];
    let first = params.nnz_base + off[s];
    if (lid == 0u) {
        let id = ids_in[params.b0 + s];
        ids_out[d] = id;
        ptr_out[d] = first;
        ptr_out[d + 1u] = first + cnt[s];
        if (params.by_id != 0u) {
            obeg[id] = first;
            oend[id] = first + cnt[s];
        }
    }
    let row = s * params.width;
    var o = first;
    for (var j0 = 0u; j0 < params.width; j0 += WG) {
        let j = j0 + lid;
        var x = 0.0;
        if (j < params.width) {
            x = buf[row + j];
        }
        let f = select(0u, 1u, x != 0.0);
        scan[lid] = f;
        workgroupBarrier();
        // Hillis-Steele inclusive scan of the flags.
        for (var step = 1u; step < WG; step *= 2u) {
            var add = 0u;
            if (lid >= step) {
                add = scan[lid - step];
            }
            workgroupBarrier();
            scan[lid] += add;
            workgroupBarrier();
        }
        if (f != 0u) {
            let at = o + scan[lid] - 1u;
            col_out[at] = j;
            val_out[at] = x;
        }
        o += scan[WG - 1u];
        workgroupBarrier();
    }
}
