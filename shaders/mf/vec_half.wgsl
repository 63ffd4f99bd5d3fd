// vword_get / vword_set of mf/vec for half storage (F16 or PACKED: the same bits, a
// vector word being VEC u32 words through pack2x16float, naga having no bitcast between u32
// and vec2<f16>); imported by mf/vec once the alias VWord is chosen. Stores round to
// nearest even first, as word_store.
#import shared/half

fn vword_get(w: VWord, c: u32) -> vec2<f32> {
    return half2_load(w[c]);
}

fn vword_set(w: ptr<function, VWord>, c: u32, v: vec2<f32>) {
    (*w)[c] = half2_store(round_to_half(v));
}
