// Hinge loss, y ∈ {−1, +1}: (max(0, 1 − yŷ), −y where 1 − yŷ > 0, else 0).
fn loss_of(yhat: f32, y: f32) -> vec2<f32> {
    let margin = 1.0 - y * yhat;
    if margin > 0.0 {
        return vec2<f32>(margin, -y);
    }
    return vec2<f32>(0.0, 0.0);
}
