// Feature storage of P and Q: one word holds two consecutive features of a row (feature 2i
// in the low half). F16: native vec2<f16> (SHADER_F16); PACKED: a u32 through
// pack2x16float (any adapter); otherwise vec2<f32>. Arithmetic is f32 on every path.
#ifdef F16
enable f16;
alias Word = vec2<f16>;

fn word_load(w: Word) -> vec2<f32> {
    return vec2<f32>(w);
}

fn word_store(v: vec2<f32>) -> Word {
    return vec2<f16>(v);
}
#else
#ifdef PACKED
#import shared/half
alias Word = u32;

fn word_load(w: Word) -> vec2<f32> {
    return half2_load(w);
}

fn word_store(v: vec2<f32>) -> Word {
    return half2_store(v);
}
#else
alias Word = vec2<f32>;

fn word_load(w: Word) -> vec2<f32> {
    return w;
}

fn word_store(v: vec2<f32>) -> Word {
    return v;
}
#endif
#endif
