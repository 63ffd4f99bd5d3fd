// One SGD update of sample `s` by a virtual subgroup of LANES lanes, each holding PER words
// (2·PER features) of p_u and q_v in registers: e = r − p_u·q_v (dot by vsg_sum), then
// p_u += lr·(e·q_v − λ·p_u) and q_v += lr·(e·p_u − λ·q_v), both from the old values. Lane t
// owns vector words t, t + LANES, … (mf/vec: VEC words each, one word without VEC2/VEC4), so
// each load and store of the virtual subgroup is contiguous.
// Plain loads and stores: concurrent updates of one row race by design (Hogwild!).
//
// The importing kernel declares `samples` (u32 triplets u, v, bits of r), `feat_p`,
// `feat_q` (array<VWord>) and the overrides LANES and PER. Call in workgroup-uniform control
// flow; `live` predicates the stores only.
#import mf/vec
#import shared/reduce

const MAX_PER: u32 = 32u;

fn sgd_update(s: u32, lid: u32, live: bool, lr: f32, lambda: f32) {
    let lane = lid % LANES;
    let vwords = LANES * PER / VEC;
    let u = samples[3u * s];
    let v = samples[3u * s + 1u];
    let r = bitcast<f32>(samples[3u * s + 2u]);
    let pb = u * vwords + lane;
    let qb = v * vwords + lane;
    var pv: array<vec2<f32>, MAX_PER>;
    var qv: array<vec2<f32>, MAX_PER>;
    var part = 0.0;
    for (var j = 0u; j < PER / VEC; j++) {
        let wp = feat_p[pb + j * LANES];
        let wq = feat_q[qb + j * LANES];
        for (var c = 0u; c < VEC; c++) {
            let i = j * VEC + c;
            pv[i] = vword_get(wp, c);
            qv[i] = vword_get(wq, c);
            part += dot(pv[i], qv[i]);
        }
    }
    let e = r - vsg_sum(part, LANES, lid);
    if live {
        for (var j = 0u; j < PER / VEC; j++) {
            var wp: VWord;
            var wq: VWord;
            for (var c = 0u; c < VEC; c++) {
                let i = j * VEC + c;
                vword_set(&wp, c, pv[i] + lr * (e * qv[i] - lambda * pv[i]));
                vword_set(&wq, c, qv[i] + lr * (e * pv[i] - lambda * qv[i]));
            }
            feat_p[pb + j * LANES] = wp;
            feat_q[qb + j * LANES] = wq;
        }
    }
}

// The next state of a worker's PCG stream: the LCG step (period 2^32) whose output
// pcg_hash permutes. Iterating pcg_hash itself would fall into short cycles.
fn pcg_next(state: u32) -> u32 {
    return state * 747796405u + 2891336453u;
}
