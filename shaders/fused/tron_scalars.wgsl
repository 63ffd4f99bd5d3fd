// The scalars of TRON's truncated CG (Steihaug, as LIBLINEAR's tron.cpp) kept on the device
// (one invocation), so a Newton step's CG iterations are recorded in one submission
// (src/fused/logreg.rs). State st (f32), slots below; fused/dot writes DHD, SS, RR, SD, DD.
// Updates happen only in the modes' gated regions (the batch's gate, runtime/gate, skips the
// iterations after STOP; the boundary region runs only while OUT is 0).
override WG: u32 = 1u;

const DHD: u32 = 0u;
const SS: u32 = 1u;
const RR: u32 = 2u;
const RTR: u32 = 3u;
const ALPHA: u32 = 4u;
// Coefficient of hd in r's update: −α inside the region, −τ at the boundary.
const RCOEF: u32 = 5u;
const STOP: u32 = 6u;
// 0 while the step crossed the trust region's boundary (its gated region runs), else 1.
const OUT: u32 = 7u;
const TAU: u32 = 8u;
const BETA: u32 = 9u;
const CGTOL2: u32 = 10u;
const DELTA: u32 = 11u;
const ITERS: u32 = 12u;
const SD: u32 = 13u;
const DD: u32 = 14u;
// CG runs ended on the boundary, counted over the solve.
const BOUNDS: u32 = 21u;

struct Params {
    // 0: start (after r·r = g·g; params.delta the radius), 1: α (after d·hd), 2: the boundary
    // test (after s·s), 3: τ (after s·d, s·s, d·d), 4: β and the stopping test (after r·r).
    mode: u32,
    delta: f32,
    max_cg: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> st: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    if tid != 0u {
        return;
    }
    switch params.mode {
        case 0u: {
            let rr = st[RR];
            st[RTR] = rr;
            // ‖r‖ ≤ 0.1·‖g‖ stops CG; r starts at −g.
            st[CGTOL2] = 0.01 * rr;
            st[DELTA] = params.delta;
            st[ITERS] = 0.0;
            st[OUT] = 1.0;
            st[STOP] = select(0.0, 1.0, rr <= st[CGTOL2] || params.max_cg == 0u);
        }
        case 1u: {
            st[ITERS] += 1.0;
            let a = st[RTR] / st[DHD];
            st[ALPHA] = a;
            st[RCOEF] = -a;
        }
        case 2u: {
            st[OUT] = select(1.0, 0.0, sqrt(st[SS]) > st[DELTA]);
        }
        case 3u: {
            // s (back inside) + τ·d on the boundary: ‖s + τ·d‖ = Δ.
            let sd = st[SD];
            let sts = st[SS];
            let dtd = st[DD];
            let dsq = st[DELTA] * st[DELTA];
            let rad = sqrt(max(sd * sd + dtd * (dsq - sts), 0.0));
            var tau = (rad - sd) / dtd;
            if sd >= 0.0 {
                tau = (dsq - sts) / (sd + rad);
            }
            st[TAU] = tau;
            st[RCOEF] = -tau;
            st[STOP] = 1.0;
            st[OUT] = 1.0;
            st[BOUNDS] += 1.0;
        }
        default: {
            let rr = st[RR];
            st[BETA] = rr / st[RTR];
            st[RTR] = rr;
            if rr <= st[CGTOL2] || u32(st[ITERS]) >= params.max_cg {
                st[STOP] = 1.0;
            }
        }
    }
}
