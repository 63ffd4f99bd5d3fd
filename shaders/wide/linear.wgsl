// Aggregate and Apply of the linear models (LR, LSVM, LSR): one Accum (w·x), one parameter
// per feature (w_j). The loss comes from a `wide/loss_*` import defining `loss_of`.
const NACC: u32 = 1u;
const NPARAM: u32 = 1u;

fn ala_aggregate(a: ptr<function, array<f32, NACC>>, j: u32, x: f32) {
    (*a)[0] += param(j, 0u) * x;
}

fn ala_loss(a: ptr<function, array<f32, NACC>>, b: f32, y: f32) -> vec3<f32> {
    let yhat = b + (*a)[0];
    let l = loss_of(yhat, y);
    return vec3<f32>(yhat, l.x, l.y);
}

// ∂ŷ/∂w_j = x_j.
fn ala_apply(s: u32, j: u32, x: f32, i: u32) -> f32 {
    return x;
}
