// CG's vector steps with their dot products and scalars, one dispatch each
// (src/fused/linreg.rs): the dot product a step needs is formed by the dispatch that writes its
// inputs, and the last workgroup to finish sums the per-workgroup partials and updates the
// scalars, so no separate dot, reduce or scalar dispatch runs. Modes (params.mode):
//   0 start:    w = 0, p = −r (r = −Xᵀb), q = λ·p when init_q; r·r; ρ, the target, the log,
//               stop.
//   1 p update: p = β·p − r, q = λ·p when init_q (no dot product).
//   2 alpha:    p·q; α = ρ / p·q, or stop = 2 when p·q is not positive (or NaN).
//   3 update:   w += α·p, r += α·q; r·r; β, ρ, the iteration count, the log, stop; with
//               fold_p (a grid of one workgroup) then the next iteration's p update too,
//               each invocation on its own elements once β is known (no mode-1 dispatch).
// Modes 1–3 change nothing once stop ≠ 0. State st (f32): 0 p·q, 1 r·r,
// 2 ρ, 3 α, 4 β, 5 stop (0 running, 1 converged or out of iterations, 2 p·q not positive),
// 6 iterations, 7 target, 8… the log of r·r.
//
// Reduction order, fixed for a given n and grid: each invocation sums its grid-stride share in
// index order, the workgroup by wg_sum's tree, the last workgroup the G partials (G ≤ WG·4)
// by a strided pass in group order per invocation, then wg_sum: the same bits run to run.
// sync[0] counts finished workgroups (zero between dispatches: the last resets it), sync[1 + g]
// holds workgroup g's partial as f32 bits. Why the hand-off is sound: see fused/finish
// (storageBarrier is a device-scope acquire-release control barrier; the partials and the
// count are only touched by atomics).
#import shared/wg_sum

override WG: u32 = 256u;

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
    mode: u32,
    n: u32,
    tol2: f32,
    max_iter: u32,
    lambda: f32,
    // Nonzero: modes 0 and 1 also write q = λ·p (the fused pass then adds Xᵀ(X·p) onto q).
    init_q: u32,
    // Nonzero (only on a grid of one workgroup): mode 3 also does mode 1's update.
    fold_p: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> st: array<f32>;
@group(0) @binding(2) var<storage, read_write> sync: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> r: array<f32>;
@group(0) @binding(5) var<storage, read_write> p: array<f32>;
@group(0) @binding(6) var<storage, read_write> q: array<f32>;

var<workgroup> last_group: u32;
var<workgroup> new_beta: f32;

// p = β·p − r, and q = λ·p when init_q, over this invocation's grid-stride share.
fn update_p(beta: f32, first: u32, stride: u32) {
    for (var i = first; i < params.n; i += stride) {
        let pi = beta * p[i] - r[i];
        p[i] = pi;
        if params.init_q != 0u {
            q[i] = params.lambda * pi;
        }
    }
}

// The scalar step after the dot product `d` (invocation 0 of the last workgroup).
fn scalars(d: f32) {
    if params.mode == 0u {
        st[RR] = d;
        st[RHO] = d;
        st[ITERS] = 0.0;
        st[TARGET] = params.tol2 * d;
        st[LOG] = d;
        st[STOP] = select(0.0, 1.0, d <= st[TARGET] || params.max_iter == 0u);
        return;
    }
    if params.mode == 2u {
        st[PQ] = d;
        // Not positive, or NaN: XᵀX + λI is not positive definite in f32.
        if !(d > 0.0) {
            st[STOP] = 2.0;
            return;
        }
        st[ALPHA] = st[RHO] / d;
        return;
    }
    st[RR] = d;
    let it = st[ITERS] + 1.0;
    st[ITERS] = it;
    st[LOG + u32(it)] = d;
    st[BETA] = d / st[RHO];
    st[RHO] = d;
    if d <= st[TARGET] || u32(it) >= params.max_iter {
        st[STOP] = 1.0;
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let mode = params.mode;
    // Read by every invocation before any writes it (the scalars change at the end only).
    let run = mode == 0u || st[STOP] == 0.0;
    let stride = nwg.x * WG;
    var s = 0.0;
    if run {
        if mode == 0u {
            for (var i = gid.x; i < params.n; i += stride) {
                let ri = r[i];
                w[i] = 0.0;
                p[i] = -ri;
                if params.init_q != 0u {
                    q[i] = params.lambda * -ri;
                }
                s += ri * ri;
            }
        } else if mode == 1u {
            update_p(st[BETA], gid.x, stride);
        } else if mode == 2u {
            for (var i = gid.x; i < params.n; i += stride) {
                s += p[i] * q[i];
            }
        } else {
            let alpha = st[ALPHA];
            for (var i = gid.x; i < params.n; i += stride) {
                w[i] += alpha * p[i];
                let ri = r[i] + alpha * q[i];
                r[i] = ri;
                s += ri * ri;
            }
        }
    }
    if mode == 1u {
        return;
    }
    let total = wg_sum(s, tid);
    if tid == 0u {
        atomicStore(&sync[1u + wid.x], bitcast<u32>(total));
    }
    storageBarrier();
    if tid == 0u {
        last_group = u32(atomicAdd(&sync[0], 1u) == nwg.x - 1u);
    }
    if workgroupUniformLoad(&last_group) == 0u {
        return;
    }
    storageBarrier();
    var t = 0.0;
    for (var g = tid; g < nwg.x; g += WG) {
        t += bitcast<f32>(atomicLoad(&sync[1u + g]));
    }
    let d = wg_sum(t, tid);
    if tid == 0u {
        atomicStore(&sync[0], 0u);
        if run {
            scalars(d);
        }
        new_beta = st[BETA];
    }
    // One workgroup: every element of r was updated by the invocation that now reads it.
    if mode == 3u && params.fold_p != 0u {
        let beta = workgroupUniformLoad(&new_beta);
        if run {
            update_p(beta, gid.x, stride);
        }
    }
}
