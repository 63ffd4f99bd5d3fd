// Logistic loss, y ∈ {−1, +1}: (log(1 + e^{−yŷ}), −y / (1 + e^{yŷ})), stable for large |ŷ|.
fn loss_of(yhat: f32, y: f32) -> vec2<f32> {
    let m = -y * yhat;
    let l = max(m, 0.0) + log(1.0 + exp(-abs(m)));
    // −y·σ(m), with σ evaluated on the side where exp cannot overflow.
    let e = exp(-abs(m));
    let sig = select(e / (1.0 + e), 1.0 / (1.0 + e), m >= 0.0);
    return vec2<f32>(l, -y * sig);
}
