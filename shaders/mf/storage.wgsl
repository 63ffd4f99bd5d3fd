// Feature storage of P and Q: one word holds two consecutive features of a row (feature 2i
// in the low half). F16: native vec2<f16> (SHADER_F16); PACKED: a u32 through
// pack2x16float (any adapter); otherwise vec2<f32>. Arithmetic is f32 on every path.
//
// Half stores round to nearest, ties to even, in f32 arithmetic first (round_to_half), so the
// conversion to f16 that follows is exact: Vulkan leaves the rounding of that conversion to
// the device, and one that truncates would shrink every stored feature a little at each of
// its thousands of updates per epoch (the CPU twin rounds to nearest even).

// v rounded to the nearest f16 value (ties to even; beyond f16's range it stays beyond and
// converts to infinity). Adding c = ±2^(e + 13), e the exponent of v (at least f16's
// smallest normal exponent, −14), leaves f32's rounding at the f16 ulp of v, 2^(e − 10);
// subtracting c again is exact. e is capped at 15 so that c stays finite.
fn round_to_half(v: vec2<f32>) -> vec2<f32> {
    let bits = bitcast<vec2<u32>>(v);
    let e = clamp((bits >> vec2(23u)) & vec2(0xffu), vec2(113u), vec2(142u));
    let c = bitcast<vec2<f32>>((bits & vec2(0x80000000u)) | ((e + 13u) << vec2(23u)));
    return (v + c) - c;
}

#ifdef F16
enable f16;
alias Word = vec2<f16>;

fn word_load(w: Word) -> vec2<f32> {
    return vec2<f32>(w);
}

fn word_store(v: vec2<f32>) -> Word {
    return vec2<f16>(round_to_half(v));
}
#else
#ifdef PACKED
#import shared/half
alias Word = u32;

fn word_load(w: Word) -> vec2<f32> {
    return half2_load(w);
}

fn word_store(v: vec2<f32>) -> Word {
    return half2_store(round_to_half(v));
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
