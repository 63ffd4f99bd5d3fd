// f32 adds into a workgroup copy of a vector as exact integer sums (Config::wg_fixed in
// src/fused/mod.rs): where float adds into workgroup memory cost a compare-exchange loop or a
// slow native add, an integer atomicAdd is a single fast instruction, and integer sums do not
// depend on the order of the adds.
//
// Column i holds V = hi·2^K + lo in units of q = 2^(fx_e − 61 + 2·LN): `lo` (fix_lo[i],
// unsigned) and `hi` (fix_hi[i], two's complement), LN = ceil(log₂(N + 1)) for N the most rows a
// workgroup takes (each adds at most once to a column), K = 31 − LN. A value c with
// |c| < 2^fx_e is split into h = floor(c / 2^(fx_e + LN − 30)), |h| ≤ 2^(30 − LN) + 1, and the
// rest rounded to a multiple of q, 0 ≤ l ≤ 2^K: N of them sum below 2^31 in either word, so
// no add overflows. Each add is off by q / 2 at most: 61 − 2·LN bits below the bound.
//
// The bound comes from maxima the kernel notes before a barrier (`fx_note`: each invocation's
// largest |x|, |row sum| and |row factor|); after the barrier `fx_settle` takes their product.
// A larger bound than fx_e's shifts every column right first (a rescale: the low bits
// dropped are below the new q); fx_e keeps FX_SLACK bits of headroom so rescales stay rare.
// A bound that is not finite (an overflow or NaN in the inputs) sends the workgroup's
// further adds straight to global memory in f32 (`accum_add`), as does a product that is not
// finite, where the compiler keeps NaN and infinities at all (WGSL lets it assume none).
//
// The maxima go to three rotating slots: event p notes into slot p % 3 (after the barrier
// that ended event p − 1) and its settle resets slot (p + 2) % 3, whose last reader settled
// before the barrier just passed and whose next writers come after the next one.
//
// Timing-only defines (src/fused/diag.rs; results not valid): DIAG_FX_NO_GLOBAL never takes
// the global path, DIAG_FX_LO_ONLY adds the low word only.
//
// The importing kernel declares NCOLS, WG and `accum` (shared/atomic_f32), calls fx_init in
// uniform control flow before its first barrier, and reads columns with fx_load after its
// last add and a barrier.

var<workgroup> fix_lo: array<atomic<u32>, NCOLS>;
var<workgroup> fix_hi: array<atomic<u32>, NCOLS>;
// Per slot: the largest |x|, |row sum| and |row factor| noted, as bits (non-negative f32
// bits order as integers).
var<workgroup> fx_max: array<atomic<u32>, 9>;

// Headroom bits above the bound, and the least exponent (q stays a normal f32).
const FX_SLACK: i32 = 3;
const FX_EMIN: i32 = -60;

// Uniform across the workgroup: the bound's exponent, whether anything was settled yet, the
// adds sent to global memory, the event count, LN and the scale factors.
var<private> fx_e: i32;
var<private> fx_empty: bool;
var<private> fx_global: bool;
var<private> fx_phase: u32;
var<private> fx_ln: i32;
var<private> fx_alpha: f32;
// 2^−(fx_e + LN − 30) and 2^K: exact power-of-two scalings of a value into hi's and lo's units.
var<private> fx_to_hi: f32;
var<private> fx_lo_units: f32;

fn fx_init(tid: u32, ln: u32, alpha: f32) {
    for (var i = tid; i < NCOLS; i += WG) {
        atomicStore(&fix_lo[i], 0u);
        atomicStore(&fix_hi[i], 0u);
    }
    if tid < 9u {
        atomicStore(&fx_max[tid], 0u);
    }
    fx_e = 0;
    fx_empty = true;
    fx_global = false;
    fx_phase = 0u;
    fx_ln = i32(ln);
    fx_alpha = alpha;
    fx_to_hi = 1.0;
    fx_lo_units = ldexp(1.0, fx_k());
}

fn fx_k() -> i32 {
    return 31 - fx_ln;
}

// log₂ of hi's unit: 2^(fx_e + LN − 30).
fn fx_hi_exp() -> i32 {
    return fx_e + fx_ln - 30;
}

// Notes this invocation's maxima for the coming settle (what it does not know, 0). With
// subgroups the caller passes each subgroup's maxima and `lead` on one lane of it.
fn fx_note(x: f32, s: f32, f: f32, lead: bool) {
    if !lead {
        return;
    }
    let p = 3u * (fx_phase % 3u);
    if x > 0.0 || x != x {
        atomicMax(&fx_max[p], bitcast<u32>(abs(x)));
    }
    if s > 0.0 || s != s {
        atomicMax(&fx_max[p + 1u], bitcast<u32>(abs(s)));
    }
    if f > 0.0 || f != f {
        atomicMax(&fx_max[p + 2u], bitcast<u32>(abs(f)));
    }
}

// The maxima noted for the current event: largest |x|, |row sum|, |row factor|. After the
// barrier that follows the notes.
fn fx_noted() -> vec3<f32> {
    let p = 3u * (fx_phase % 3u);
    return vec3<f32>(
        bitcast<f32>(atomicLoad(&fx_max[p])),
        bitcast<f32>(atomicLoad(&fx_max[p + 1u])),
        bitcast<f32>(atomicLoad(&fx_max[p + 2u])),
    );
}

// Column i shifted right by d ≥ 1 bits (floor): no adds in flight.
fn fx_shift(i: u32, d: u32) {
    let k = u32(fx_k());
    let mask = (1u << k) - 1u;
    let lo = atomicLoad(&fix_lo[i]);
    let h = bitcast<i32>(atomicLoad(&fix_hi[i])) + i32(lo >> k);
    let l = lo & mask;
    var nh: i32;
    var nl: u32;
    if d < k {
        nh = h >> d;
        nl = ((bitcast<u32>(h) << (k - d)) | (l >> d)) & mask;
    } else {
        nh = h >> min(d, 31u);
        nl = bitcast<u32>(h >> min(d - k, 31u)) & mask;
    }
    atomicStore(&fix_lo[i], nl);
    atomicStore(&fix_hi[i], bitcast<u32>(nh));
}

// Takes `bound` (≥ every |c| the adds until the next settle bring; uniform) for the current
// event and moves to the next. Call in uniform control flow after the barrier that follows
// the event's notes; ends with a barrier where it rescales.
fn fx_settle(tid: u32, n: u32, bound: f32) {
    if tid == 0u {
        let r = 3u * ((fx_phase + 2u) % 3u);
        atomicStore(&fx_max[r], 0u);
        atomicStore(&fx_max[r + 1u], 0u);
        atomicStore(&fx_max[r + 2u], 0u);
    }
    fx_phase += 1u;
    if fx_global || bound == 0.0 {
        return;
    }
    if !(bound <= 3.4028235e38) {
#ifndef DIAG_FX_NO_GLOBAL
        fx_global = true;
#endif
        return;
    }
    let e = max(frexp(bound).exp + FX_SLACK, FX_EMIN);
    if fx_empty {
        fx_e = e;
        fx_empty = false;
        fx_to_hi = ldexp(1.0, -fx_hi_exp());
        return;
    }
    if e <= fx_e {
        return;
    }
    let d = u32(e - fx_e);
    for (var i = tid; i < n; i += WG) {
        fx_shift(i, d);
    }
    fx_e = e;
    fx_to_hi = ldexp(1.0, -fx_hi_exp());
    workgroupBarrier();
}

// Adds c (|c| ≤ the settled bound) to column i; NaN and infinities (which the bound's maxima
// may have missed) go to global memory as float adds.
fn fx_add(i: u32, c: f32) {
#ifndef DIAG_FX_NO_GLOBAL
    if fx_global || !(abs(c) <= 3.4028235e38) {
        accum_add(i, fx_alpha * c);
        return;
    }
#endif
    // Both scalings are exact: |t| < 2^(30 − LN), and t − h is t's fraction.
    let t = c * fx_to_hi;
    let h = floor(t);
    let l = u32(round((t - h) * fx_lo_units));
    if l != 0u {
        atomicAdd(&fix_lo[i], l);
    }
#ifndef DIAG_FX_LO_ONLY
    if h != 0.0 {
        atomicAdd(&fix_hi[i], bitcast<u32>(i32(h)));
    }
#endif
}

// Column i's sum as an f32 (after the last add and a barrier).
fn fx_load(i: u32) -> f32 {
    let k = u32(fx_k());
    let lo = atomicLoad(&fix_lo[i]);
    let h = bitcast<i32>(atomicLoad(&fix_hi[i])) + i32(lo >> k);
    let l = lo & ((1u << k) - 1u);
    return ldexp(f32(h), fx_hi_exp()) + ldexp(f32(l), fx_hi_exp() - fx_k());
}
