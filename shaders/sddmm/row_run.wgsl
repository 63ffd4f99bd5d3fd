// SDDMM by row runs: a virtual subgroup of VWS lanes owns a run of consecutive nonzeros of
// one row of S (heavy rows are cut into several runs). It loads that row of A once into
// registers — lane l holds vec4s l, l + VWS, … (REGS of them) — and streams the run's rows
// of B, VWS nonzeros per step: each lane dots its slice of A with its slice of each of the
// VWS rows of B (coalesced across the lanes), then a transposed butterfly leaves lane l with
// nonzero l's sum, so each step ends with one coalesced store of VWS values. A is read once
// per run instead of once per nonzero, halving the gathered bytes when runs are long.
//
// runs[r] = (row, first nonzero, end of nonzeros, 0): the nonzeros of one row within one
// column panel, panel after panel so that one panel of B at a time is streamed through L2,
// and longest first within a panel so that a workgroup's runs are alike. Every lane loops
// over the workgroup's longest run (the reductions need uniform control flow).
#import shared/reduce

override WG: u32 = 256u;
override VWS: u32 = 8u;
// vec4s of A each lane holds: ceil(stride4 / VWS), at most 16.
override REGS: u32 = 1u;

// out_base: where this band's first nonzero sits in the bound window of `out`.
struct Params {
    n_runs: u32,
    stride4: u32,
    out_base: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> runs: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

var<workgroup> longest_seen: atomic<u32>;
var<workgroup> longest: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first_run = (wid.y * nwg.x + wid.x) * (WG / VWS);
    let lane = lid % VWS;
    var run = vec4<u32>(0u);
    if first_run + lid / VWS < params.n_runs {
        run = runs[first_run + lid / VWS];
    }
    if lid == 0u {
        atomicStore(&longest_seen, 0u);
    }
    workgroupBarrier();
    if lane == 0u {
        atomicMax(&longest_seen, run.z - run.y);
    }
    workgroupBarrier();
    if lid == 0u {
        longest = atomicLoad(&longest_seen);
    }
    let trips = workgroupUniformLoad(&longest);
    var ar: array<vec4<f32>, 16>;
    let row_a = run.x * params.stride4;
    for (var r = 0u; r < REGS; r++) {
        let q = lane + r * VWS;
        ar[r] = vec4<f32>(0.0);
        if run.z > run.y && q < params.stride4 {
            ar[r] = a[row_a + q];
        }
    }
    for (var t = 0u; t < trips; t += VWS) {
        var part: array<f32, 32>;
        for (var j = 0u; j < VWS; j++) {
            let e = run.y + t + j;
            var s = vec4<f32>(0.0);
            if e < run.z {
                let row_b = cols[e] * params.stride4;
                for (var r = 0u; r < REGS; r++) {
                    let q = lane + r * VWS;
                    if q < params.stride4 {
                        s += ar[r] * b[row_b + q];
                    }
                }
            }
            part[j] = s.x + s.y + s.z + s.w;
        }
        let total = vsg_transpose_sum(&part, VWS, lid);
        let e = run.y + t + lane;
        if e < run.z {
            out[params.out_base + e] = vals[e] * total;
        }
    }
}
