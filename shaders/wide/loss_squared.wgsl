// Squared loss: ((y − ŷ)², 2(ŷ − y)).
fn loss_of(yhat: f32, y: f32) -> vec2<f32> {
    let d = yhat - y;
    return vec2<f32>(d * d, 2.0 * d);
}
