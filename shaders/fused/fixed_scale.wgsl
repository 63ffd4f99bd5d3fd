// Per-run column scales for fixed-point accumulation (src/fused/fixed.rs): every workgroup
// reduces fused/fixed_max's partial maxima (Y = max|y|, V = max|v|, 1 without v), then
// scales[c] = 2^s with s = 30 − e, where S_c·Y·V < 2^e (bounds[offset + c] = S_c, the host's
// bound of a workgroup's partial of column c in units of Y·V), clamped to [−126, 126].
// e comes from the exponents of S_c, Y, V and of the product of their mantissas (each in
// [1/2, 1)), so no product over- or underflows. scales[c] = 0 (the column takes f32
// compare-exchange adds) when S_c, Y or V is not finite, or s would be below −126.
override WG: u32 = 256u;

const S_MIN: i32 = -126;
const S_MAX: i32 = 126;
const NONFINITE: u32 = 0x7f800000u;
const MIN_NORMAL: u32 = 0x00800000u;

struct Params {
    n: u32,
    // fused/fixed_max's workgroups (at most WG).
    parts: u32,
    // n for the xty bounds, else 0.
    offset: u32,
    has_v: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part: array<u32>;
@group(0) @binding(2) var<storage, read> bounds: array<f32>;
@group(0) @binding(3) var<storage, read_write> scales: array<f32>;

var<workgroup> red: array<vec2<u32>, WG>;

// A maximum's bit pattern as a value for exponent arithmetic: subnormals raised to the
// smallest normal (a larger bound stays safe).
fn normal_bits(b: u32) -> u32 {
    if b != 0u && b < MIN_NORMAL {
        return MIN_NORMAL;
    }
    return b;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    var m = vec2<u32>(0u, 0u);
    if lid < params.parts {
        m = vec2<u32>(part[2u * lid], part[2u * lid + 1u]);
    }
    red[lid] = m;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if lid < s {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let yb = normal_bits(red[0].x);
    var vb = 0x3f800000u;
    if params.has_v != 0u {
        vb = normal_bits(red[0].y);
    }
    let finite = yb < NONFINITE && vb < NONFINITE;
    let fy = frexp(bitcast<f32>(yb));
    let fv = frexp(bitcast<f32>(vb));
    for (var c = gid.x; c < params.n; c += nwg.x * WG) {
        let b = bounds[params.offset + c];
        var sc = 0.0;
        if finite && (bitcast<u32>(b) & 0x7fffffffu) < NONFINITE {
            if b == 0.0 || yb == 0u || vb == 0u {
                // Every term is zero.
                sc = exp2(f32(S_MAX));
            } else {
                let fb = frexp(b);
                // Mantissas in [1/2, 1): their product in [1/8, 1), rounded monotonically.
                let fm = frexp(fb.fract * fy.fract * fv.fract);
                let e = fb.exp + fy.exp + fv.exp + fm.exp;
                let s = 30 - e;
                if s >= S_MIN {
                    sc = exp2(f32(min(s, S_MAX)));
                }
            }
        }
        scales[c] = sc;
    }
}
