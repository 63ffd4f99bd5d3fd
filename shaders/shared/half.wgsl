// Half-precision storage: two f16 values per u32 word (element 2i in the low half).
// pack2x16float/unpack2x16float exist on every adapter and round to nearest even, so one path
// serves all; kernels that also compute in f16 (SHADER_F16) convert the unpacked vec2<f32>.
// (naga rejects bitcast between u32 and vec2<f16>, so there is no cheaper native load.)
fn half2_load(word: u32) -> vec2<f32> {
    return unpack2x16float(word);
}

fn half2_store(v: vec2<f32>) -> u32 {
    return pack2x16float(v);
}
