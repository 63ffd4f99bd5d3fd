// Per-row terms of L2-regularized logistic regression at weights y (labels ±1), CSR-vector
// like fused/spmv: t = label_r·(x_r·y); loss[r] = log(1 + e^(−t)) (computed stably);
// coef[r] = (σ(t) − 1)·label_r, the gradient's row weights; dd[r] = σ(t)(1 − σ(t)), the Hessian's
// (the v of the fused pattern). Rows are visited in a uniform number of steps (params.c).
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
@group(0) @binding(5) var<storage, read> label: array<f32>;
@group(0) @binding(6) var<storage, read_write> loss: array<f32>;
@group(0) @binding(7) var<storage, read_write> coef: array<f32>;
@group(0) @binding(8) var<storage, read_write> dd: array<f32>;

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
        let z = vsg_sum(csr_row_partial(row, lane, row < params.m), VS, tid);
        if row < params.m && lane == 0u {
            let g = params.row_base + row;
            let t = label[g] * z;
            let e = exp(-abs(t));
            loss[g] = log(1.0 + e) + max(-t, 0.0);
            // σ(t) without overflow: e = e^(−|t|).
            var sigma = 1.0 / (1.0 + e);
            if t < 0.0 {
                sigma = e / (1.0 + e);
            }
            coef[g] = (sigma - 1.0) * label[g];
            dd[g] = sigma * (1.0 - sigma);
        }
        row += nwg.x * nv;
    }
}
