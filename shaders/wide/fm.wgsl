// Aggregate and Apply of the factorization machine of rank FM_K (a const the model
// descriptor prepends). Accums: [w·x, v_f·x (f < K), Σ_f Σ_j v_jf² x_j²] (ŷ needs the
// squares' sum over f alone, so one Accum holds it: K + 2 per sample, not 2K + 1);
// parameters of feature j: [w_j, v_j0 … v_j(K−1)]. The loss comes from a `wide/loss_*`
// import.
const NACC: u32 = 2u + FM_K;
const NPARAM: u32 = 1u + FM_K;

fn ala_aggregate(a: ptr<function, array<f32, NACC>>, j: u32, x: f32) {
    (*a)[0] += param(j, 0u) * x;
    var q = 0.0;
    for (var f = 0u; f < FM_K; f++) {
        let v = param(j, 1u + f);
        (*a)[1u + f] += v * x;
        q += v * v;
    }
    (*a)[1u + FM_K] += q * x * x;
}

// ŷ = b + w·x + ½ Σ_f ((v_f·x)² − Σ_j v_jf² x_j²).
fn ala_loss(a: ptr<function, array<f32, NACC>>, b: f32, y: f32) -> vec3<f32> {
    var pair = -(*a)[1u + FM_K];
    for (var f = 0u; f < FM_K; f++) {
        let s = (*a)[1u + f];
        pair += s * s;
    }
    let yhat = b + (*a)[0] + 0.5 * pair;
    let l = loss_of(yhat, y);
    return vec3<f32>(yhat, l.x, l.y);
}

// ∂ŷ/∂w_j = x_j; ∂ŷ/∂v_jf = x_j·(v_f·x) − v_jf·x_j².
fn ala_apply(s: u32, j: u32, x: f32, i: u32) -> f32 {
    if i == 0u {
        return x;
    }
    return x * acc(s, i) - param(j, i) * x * x;
}
