// p = X·y with X in CSR (CSR-vector: VS consecutive lanes per row, reduced by shared/reduce):
// the first step of the unfused sequence. Rows are visited in a uniform number of steps
// (params.c per vector) so every lane reaches the reduction.
#import shared/reduce
#import fused/csr_row

override WG: u32 = 256u;
override VS: u32 = 8u;

struct Params {
    m: u32,
    c: u32,
    // X's row of local row 0 (row_ptr is a band's, src/fused/bands.rs).
    row_base: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> p: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lane = tid % VS;
    let nv = WG / VS;
    var row = wid.x * nv + tid / VS;
    for (var c = 0u; c < params.c; c++) {
        let total = vsg_sum(csr_row_partial(row, lane, row < params.m), VS, tid);
        if row < params.m && lane == 0u {
            p[params.row_base + row] = total;
        }
        row += nwg.x * nv;
    }
}
