// Vector access to the rows of P and Q (batch-Hogwild!): VEC adjacent words of a row as one
// load or store. Lane t of a virtual subgroup owns vector words t, t + LANES, … of a row
// (words VEC·(t + j·LANES) + c, c < VEC): each access of the virtual subgroup stays
// contiguous, and each lane's is one 8- or 16-byte load (half storage: VEC2 8 bytes, VEC4 16;
// f32: VEC2 16 bytes, VEC4 two of 16). Half storage (F16 or PACKED, the same bits) goes
// through pack2x16float, naga having no bitcast between u32 and vec2<f16>; stores round to
// nearest even first, as word_store. Without VEC2 or VEC4 a vector word is one Word.
//
// vword_get(w, c): word c of w as vec2<f32>; vword_set(&w, c, v): stores v as word c of w.
#import mf/storage

#ifdef VEC4
const VEC: u32 = 4u;
#ifdef F16
alias VWord = vec4<u32>;
#import mf/vec_half
#else
#ifdef PACKED
alias VWord = vec4<u32>;
#import mf/vec_half
#else
alias VWord = array<vec4<f32>, 2>;

fn vword_get(w: VWord, c: u32) -> vec2<f32> {
    var a = w;
    let h = a[c / 2u];
    let i = 2u * (c % 2u);
    return vec2(h[i], h[i + 1u]);
}

fn vword_set(w: ptr<function, VWord>, c: u32, v: vec2<f32>) {
    let i = 2u * (c % 2u);
    (*w)[c / 2u][i] = v.x;
    (*w)[c / 2u][i + 1u] = v.y;
}
#endif
#endif
#else
#ifdef VEC2
const VEC: u32 = 2u;
#ifdef F16
alias VWord = vec2<u32>;
#import mf/vec_half
#else
#ifdef PACKED
alias VWord = vec2<u32>;
#import mf/vec_half
#else
alias VWord = vec4<f32>;

fn vword_get(w: VWord, c: u32) -> vec2<f32> {
    return vec2(w[2u * c], w[2u * c + 1u]);
}

fn vword_set(w: ptr<function, VWord>, c: u32, v: vec2<f32>) {
    (*w)[2u * c] = v.x;
    (*w)[2u * c + 1u] = v.y;
}
#endif
#endif
#else
const VEC: u32 = 1u;
alias VWord = Word;

fn vword_get(w: VWord, c: u32) -> vec2<f32> {
    return word_load(w);
}

fn vword_set(w: ptr<function, VWord>, c: u32, v: vec2<f32>) {
    *w = word_store(v);
}
#endif
#endif
