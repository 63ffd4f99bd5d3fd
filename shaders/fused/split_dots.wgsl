// The first pass of the column-split sequence (src/fused/split.rs): p[row] = α·v[row]·(X·y)[row]
// over X's CSR rows (XTY: α·v[row]·y[row], y ∈ ℝᵐ), VS consecutive lanes per row reduced by
// shared/reduce, params.c rows per vector (a uniform trip count, so every lane reaches the
// reduction). It also sets w = β·z (flags bit 1; else w = 0) for fused/split's adds.
// COL16 (n ≤ 65,536): X's column indices 16 bits each, two per word (entry i in word i / 2,
// low half first): 6 bytes per entry read instead of 8.
// A lane takes 4 entries of its row per trip (fused/csr_row4): the pass ends
// with its longest row, and on power-law X a few hundred rows hold all n entries, walked by
// one vector in n / VS trips of memory latency each (128 at n = 4,096, VS 32) when a trip
// loads one entry; 4 per trip cut them to n / (4·VS).
#import shared/reduce
#import fused/csr_row4

override WG: u32 = 256u;
override VS: u32 = 8u;

struct Params {
    m: u32,
    n: u32,
    // Rows per vector.
    c: u32,
    // Bit 0: multiply by v. Bit 1: w = β·z (else 0).
    flags: u32,
    alpha: f32,
    beta: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
#ifdef COL16
@group(0) @binding(2) var<storage, read> col16: array<u32>;
#else
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
#endif
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> z: array<f32>;
@group(0) @binding(7) var<storage, read_write> p: array<f32>;
@group(0) @binding(8) var<storage, read_write> w: array<f32>;

// Column of entry i.
fn col_at(i: u32) -> u32 {
#ifdef COL16
    return (col16[i >> 1u] >> ((i & 1u) << 4u)) & 0xffffu;
#else
    return col_idx[i];
#endif
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    for (var i = wid.x * WG + tid; i < params.n; i += nwg.x * WG) {
        var t = 0.0;
        if (params.flags & 2u) != 0u {
            t = params.beta * z[i];
        }
        w[i] = t;
    }
    let lane = tid % VS;
    let nv = WG / VS;
    var row = wid.x * nv + tid / VS;
    for (var c = 0u; c < params.c; c++) {
        let ok = row < params.m;
#ifdef XTY
        var s = 0.0;
        if ok {
            s = y[row];
        }
#else
        var s = vsg_sum(csr_row_partial4(row, lane, ok), VS, tid);
#endif
        if ok && lane == 0u {
            if (params.flags & 1u) != 0u {
                s *= v[row];
            }
            p[row] = params.alpha * s;
        }
        row += nwg.x * nv;
    }
}
