// CG's scalars kept on the device (one invocation), so many iterations are recorded in one
// submission (src/fused/linreg.rs). State st (f32): 0 p·q, 1 r·r (both written by fused/dot),
// 2 ρ (r·r of the last iteration), 3 α, 4 β, 5 stop (0 running, 1 converged or out of
// iterations, 2 p·q not positive), 6 iterations run, 7 the target ‖r‖² ≤ tol²·‖r₀‖², and from
// 8 the log of r·r (entry 8 + k after iteration k). Updates happen only while stop is 0; the
// batch's gate (runtime/gate) skips the iterations after a stop.
override WG: u32 = 1u;

const PQ: u32 = 0u;
const RR: u32 = 1u;
const RHO: u32 = 2u;
const ALPHA: u32 = 3u;
const BETA: u32 = 4u;
const STOP: u32 = 5u;
const ITERS: u32 = 6u;
const TARGET: u32 = 7u;
const LOG: u32 = 8u;

struct Params {
    // 0: start (after r₀·r₀), 1: α (after p·q), 2: β and the stopping test (after r·r).
    mode: u32,
    tol2: f32,
    max_iter: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> st: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    if tid != 0u {
        return;
    }
    let rr = st[RR];
    if params.mode == 0u {
        st[RHO] = rr;
        st[ITERS] = 0.0;
        st[TARGET] = params.tol2 * rr;
        st[LOG] = rr;
        st[STOP] = select(0.0, 1.0, rr <= st[TARGET] || params.max_iter == 0u);
        return;
    }
    if st[STOP] != 0.0 {
        return;
    }
    if params.mode == 1u {
        let pq = st[PQ];
        // Not positive, or NaN: XᵀX + λI is not positive definite in f32.
        if !(pq > 0.0) {
            st[STOP] = 2.0;
            return;
        }
        st[ALPHA] = st[RHO] / pq;
        return;
    }
    let it = st[ITERS] + 1.0;
    st[ITERS] = it;
    st[LOG + u32(it)] = rr;
    st[BETA] = rr / st[RHO];
    st[RHO] = rr;
    if rr <= st[TARGET] || u32(it) >= params.max_iter {
        st[STOP] = 1.0;
    }
}
