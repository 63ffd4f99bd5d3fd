// spdnn.sliced: one sparse DNN layer in sliced ELL, fused multiply + bias + clamp, for any N.
// A workgroup computes a tile of R = 4·RV active rows × B = WG·T output neurons. The input
// columns are cut into slices of S; for each slice, the tile's rows are staged in workgroup
// memory as ys[c·RV + v] = rows 4v..4v+3 at slice column c (one vec4 load serves four rows),
// then each invocation adds, for each of its T outputs j = block·B + t·WG + lid, the
// entries of W's column j whose source lies in the slice; its T·R sums stay in registers
// across slices. The entries of one (block, slice, t) are cut into groups of G lanes, each
// group an ELL of its own width (word k of lane i at seg[q] + k·G + i; padding: position S,
// a staged column kept zero, weight 0). With PACKED every weight of the layer is
// params.weight: a word holds two u16 positions and no weight is loaded; the sums of the
// staged values are multiplied by the weight at the end (the same f32 sums when it is a
// power of two, as the challenge's 1/16). z ≠ 0 (a structural nonzero of Z = Y·W)
// gets the bias, then the value is clamped to [0, YMAX]. Rows are not moved: slot s of the
// active list is row ids[s] of y_in and y_out (row-major, n per row). A row with a nonzero
// output in this tile sets its flag and its scan input (`flags`, `pos`) with atomicOr; the
// next dispatches scan `pos` and select the next active list. The active count is read on
// the device, so every layer can be recorded ahead; workgroups past it return at once.
// Any subgroup size (G is only the ELL's grouping: a subgroup's loop runs to its longest lane
// whatever G is; smaller groups only save padding bytes).
// Constant rows (CONSTANT_ROWS): every layer also records, per row id, whether the row's
// output is one value c over all n columns: `konst[4·id + 2·h]` is the min and `+ 1` the
// max of the f32 bits of the row's per-block values (outputs are ≥ 0, so u32 order is
// float order), h = params.half = l mod 2. A block whose outputs of a row all equal its
// reference (the output at column block·B, from invocation 0) gives that value to both;
// a block with two values gives 0xffffffff to the max. So min == max iff the row is
// constant. The next layer reads the other half: a tile whose rows are all constant and
// nonzero (y = c_r·1) computes z_j = c_r·csum[j] (csum = Σ_k W[k, j], or the entry count
// when PACKED, the weight applied as on the general path) with no staging and no gather,
// then the same epilogue. Columns with no entry have csum = 0, so z = 0 and no bias, as
// on the general path. spdnn.select resets the survivors' next half; spdnn.reset resets
// half 0 for layer 0, which never takes the fast path (params.fast = 0).
// Unwritten constant rows: when the layer's column sums are all ≥ 0 (params.lazy; and its
// packed weight > 0), a fast row's outputs f(c·csum[j]) are monotone in csum[j], so they are
// one value iff f(c·cmin) = f(c·cmax) (the layer's extreme column sums). A fast tile whose
// rows all pass writes no output at all: each row's value goes to its constancy words only.
// So a constant row's activations may be absent from y_in: every reader of a row that its
// constancy words call constant takes c from them (the fast path, the staging of gathered
// tiles, and the host's readback of the final layer), never y_in.
// Slice sums (SLICE_SUMS): each (t, slice)'s gathers go to registers of their own (one vec4
// per row vector, named, so no dynamic index), added to acc once per slice; otherwise each
// gather is added to acc[t·RV + v] (an index a compiler may not resolve, leaving acc in
// memory). The same sums up to the order of the f32 additions.
// Segments together (SEGMENTS_TOGETHER): the T segment bounds of a slice are loaded up front
// and one loop runs over the longest, each turn gathering word k of every segment still that
// long, so T weight loads are in flight instead of one. Each output adds its words in the
// same order as one segment after another: the same f32 sums. With PREFETCH_BOUNDS the
// next slice's bounds are loaded before the barrier that ends a slice (slice 0's before its
// staging), so their round trip overlaps the barrier and the staging.
// Unrolled staging (STAGE_UNROLL = U > 1): each invocation loads the 4·RV rows of U columns
// (c, c + WG, …; a column past the slice loads the slice's last again, never stored) before
// any of its U stores, so U·4·RV loads are in flight instead of 4·RV. No branch per row: a
// row that does not read y_in (constant, or past the active count) loads from a row that
// does and a select puts its c (or 0) in place, the values today's loop stages.
// Scalar rows (SCALAR_ROWS, params.to_scalar when the next layer's column sums are all one
// value s): a row whose input is constant, nonzero, and whose output is one value c' over
// every column (the same test as an unwritten row) leaves the active list: the tile of
// block 0 appends (row id, c' bits) to the chunk's scalar list (`scal_out`, count
// `scount[layer mod 3]`, see spdnn.select), and no block sets its flag (c' = 0: the row
// died). spdnn.select then advances it as c ← f(c·s) with no gather while the layers stay
// uniform, and spdnn.rejoin puts it back in the active list (its constancy words = c) before
// the first layer that is not.
// `stats` counts, per layer, the tiles that took the fast path, the tiles that ran and the
// fast tiles that wrote nothing, each spread over STAT_SLOTS slots STAT_STRIDE words apart
// (one 32-byte sector each).
override WG: u32 = 256u;
// Outputs per invocation (1..=MAX_T) and vec4s of rows per workgroup (1..=MAX_RV), with
// T·RV ≤ MAX_ACC (checked on the host).
override T: u32 = 1u;
override RV: u32 = 1u;
// Columns per slice, and the staging array's length (S + 1)·RV (column S stays zero).
override S: u32 = 256u;
override STAGE_LEN: u32 = 257u;
// Positions packed two per word and one weight per layer (see above).
override PACKED: bool = false;
// Lanes per ELL group (divides WG; 8 lanes of 4-byte words read one 32-byte sector per step).
override G: u32 = 32u;
// Constancy detection and the constant-row fast path (see above).
override CONSTANT_ROWS: bool = true;
// Constant rows carried as scalars through uniform layers (see above).
override SCALAR_ROWS: bool = false;
// Each slice's gathers summed in registers (see above).
override SLICE_SUMS: bool = false;
// All T output segments of a slice in one loop (see above; never with SLICE_SUMS).
override SEGMENTS_TOGETHER: bool = false;
// With SEGMENTS_TOGETHER: the next slice's segment bounds loaded before this one's last
// barrier (see above).
override PREFETCH_BOUNDS: bool = false;
// Columns each invocation stages per turn (1..=MAX_UNROLL; 1: one column a turn).
override STAGE_UNROLL: u32 = 1u;
const MAX_T: u32 = 8u;
const MAX_RV: u32 = 4u;
const MAX_ACC: u32 = 16u;
const MAX_R: u32 = 16u;
const MAX_UNROLL: u32 = 4u;
const YMAX: f32 = 32.0;
const STAT_SLOTS: u32 = 16u;
const STAT_STRIDE: u32 = 8u;
const NOT_FAST: u32 = 0x10000u;
const NOT_LAZY: u32 = 0x20000u;

struct Params {
    n: u32,
    slices: u32,
    blocks: u32,
    bias: f32,
    weight: f32,
    // The layer's index (for `stats`), whether it may take the fast path (its inputs carry
    // constancy: every layer but the first, with constant rows on), and l mod 2.
    layer: u32,
    fast: u32,
    half: u32,
    // The least and greatest column sum, and 1 when every column sum is ≥ 0 (and the packed
    // weight > 0): unwritten constant rows allowed.
    cmin: f32,
    cmax: f32,
    lazy: u32,
    // 1 when the next layer's column sums are one value: rows may leave for the scalar list.
    to_scalar: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> count: array<u32>;
@group(0) @binding(2) var<storage, read> seg: array<u32>;
@group(0) @binding(3) var<storage, read> w_pos: array<u32>;
@group(0) @binding(4) var<storage, read> w_val: array<f32>;
@group(0) @binding(5) var<storage, read> ids: array<u32>;
@group(0) @binding(6) var<storage, read> y_in: array<f32>;
@group(0) @binding(7) var<storage, read_write> y_out: array<f32>;
@group(0) @binding(8) var<storage, read_write> flags: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> pos: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read> csum: array<f32>;
@group(0) @binding(11) var<storage, read_write> konst: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> scal_out: array<u32>;
@group(0) @binding(14) var<storage, read_write> scount: array<atomic<u32>>;

var<workgroup> wg_count: u32;
var<workgroup> wg_any: atomic<u32>;
var<workgroup> ys: array<vec4<f32>, STAGE_LEN>;
// The tile's constancy bits as its rows' invocations find them, and as the workgroup reads
// them (uniformly): bit r set when row r's input is constant, NOT_FAST, NOT_LAZY.
var<workgroup> wg_state: atomic<u32>;
// The tile's mode (wg_state as read, or NOT_FAST | NOT_LAZY unchecked) and the rows leaving
// for the scalar list (bit r), read by all in one workgroupUniformLoad.
struct TileMode {
    mode: u32,
    smask: u32,
}
var<workgroup> wg_tile: TileMode;
// Each row's constant input value, and its reference output bits (constancy detection) or,
// in a tile that writes nothing, its output.
var<workgroup> wg_c: array<f32, MAX_R>;
var<workgroup> wg_ref: array<u32, MAX_R>;
// Bit r: row r leaves for the scalar list (its output one value, the next layer uniform).
var<workgroup> wg_scal: atomic<u32>;

// z ≠ 0 (a structural nonzero of Z) gets the bias, then the clamp to [0, YMAX].
fn activate(z: f32) -> f32 {
    var out = 0.0;
    if (z != 0.0) {
        out = clamp(z + params.bias, 0.0, YMAX);
    }
    return out;
}

// An output's bits for the constancy comparison (a −0 counts as 0).
fn out_bits(out: f32) -> u32 {
    return select(bitcast<u32>(out), 0u, out == 0.0);
}

// A product's z as the epilogue sees it (the packed layer's weight applied).
fn scaled(z: f32) -> f32 {
    if (PACKED) {
        return z * params.weight;
    }
    return z;
}

// The first sliced-ELL word of segment (block, slice sl, output t, group grp).
fn seg_index(block: u32, sl: u32, t: u32, grp: u32) -> u32 {
    return ((block * params.slices + sl) * T + t) * (WG / G) + grp;
}

// The fast-path counters' word of `kind` (0: fast tiles, 1: tiles run, 2: fast tiles that
// wrote nothing) for workgroup `gid`.
fn stat_word(kind: u32, gid: u32) -> u32 {
    return ((params.layer * 3u + kind) * STAT_SLOTS + gid % STAT_SLOTS) * STAT_STRIDE;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let gid = wid.y * nwg.x + wid.x;
    let block = gid % params.blocks;
    let s0 = (gid / params.blocks) * (4u * RV);
    if (lid == 0u) {
        wg_count = count[0];
        atomicStore(&wg_any, 0u);
        atomicStore(&wg_state, 0u);
        atomicStore(&wg_scal, 0u);
    }
    let live = workgroupUniformLoad(&wg_count);
    if (s0 >= live) {
        return;
    }
    let rows = min(4u * RV, live - s0);
    let n = params.n;
    // Each row's offset in y_in / y_out; rows past the active count stage zeros. Loaded
    // before the constancy check reads the same ids words, so one round trip serves both
    // and it is over before the staging needs them.
    var base: array<u32, MAX_R>;
    for (var r = 0u; r < 4u * RV; r++) {
        base[r] = ids[s0 + min(r, rows - 1u)] * n;
    }
    // The tile's input rows' constancy, one invocation per row: bit r of wg_state when row r
    // is constant, NOT_FAST when some row is not, NOT_LAZY when some row's output may vary.
    let check = CONSTANT_ROWS && params.fast != 0u;
    if (check) {
        for (var r = lid; r < 4u * RV; r += WG) {
            var c = 0.0;
            var bits = 0u;
            if (r < rows) {
                let k = ids[s0 + r] * 4u + (1u - params.half) * 2u;
                let lo = atomicLoad(&konst[k]);
                let hi = atomicLoad(&konst[k + 1u]);
                if (lo == hi && hi != 0u) {
                    bits = 1u << r;
                    c = bitcast<f32>(hi);
                } else {
                    bits = NOT_FAST;
                }
                let a = out_bits(activate(scaled(c * params.cmin)));
                let b = out_bits(activate(scaled(c * params.cmax)));
                if (a != b || params.lazy == 0u) {
                    bits |= NOT_LAZY;
                } else if (SCALAR_ROWS && params.to_scalar != 0u && (bits & NOT_FAST) == 0u) {
                    atomicOr(&wg_scal, 1u << r);
                }
                wg_ref[r] = a;
            }
            wg_c[r] = c;
            atomicOr(&wg_state, bits);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        var st = NOT_FAST | NOT_LAZY;
        if (check) {
            st = atomicLoad(&wg_state);
        }
        var smask = 0u;
        if (SCALAR_ROWS && check) {
            smask = atomicLoad(&wg_scal);
            // Block 0's tile appends its leaving rows that live (every block has the same
            // rows and the same mask).
            if (block == 0u && smask != 0u) {
                var m = 0u;
                for (var r = 0u; r < rows; r++) {
                    if ((smask & (1u << r)) != 0u && wg_ref[r] != 0u) {
                        m++;
                    }
                }
                var at = atomicAdd(&scount[params.layer % 3u], m);
                for (var r = 0u; r < rows; r++) {
                    if ((smask & (1u << r)) != 0u && wg_ref[r] != 0u) {
                        scal_out[2u * at] = ids[s0 + r];
                        scal_out[2u * at + 1u] = wg_ref[r];
                        at++;
                    }
                }
            }
        }
        wg_tile = TileMode(st, smask);
        if (CONSTANT_ROWS) {
            atomicAdd(&stats[stat_word(1u, gid)], 1u);
            if ((st & NOT_FAST) == 0u) {
                atomicAdd(&stats[stat_word(0u, gid)], 1u);
                if ((st & NOT_LAZY) == 0u) {
                    atomicAdd(&stats[stat_word(2u, gid)], 1u);
                }
            }
        }
    }
    let tile = workgroupUniformLoad(&wg_tile);
    let mode = tile.mode;
    // Rows leaving for the scalar list: no flag, no output; a tile of such rows only is done.
    let smask = tile.smask;
    if (SCALAR_ROWS && smask == (1u << rows) - 1u) {
        return;
    }
    // Every row's input is one nonzero value: the fast path.
    let fast = (mode & NOT_FAST) == 0u;
    // A tile that writes nothing: each row's one output value to its flags and constancy
    // words (every block of the row finds the same value).
    if (fast && (mode & NOT_LAZY) == 0u) {
        for (var r = lid; r < rows; r += WG) {
            let out = wg_ref[r];
            if (out != 0u && (smask & (1u << r)) == 0u) {
                atomicOr(&flags[s0 + r], 1u);
                atomicOr(&pos[s0 + r], 1u);
            }
            let k = ids[s0 + r] * 4u + params.half * 2u;
            atomicMin(&konst[k], out);
            atomicMax(&konst[k + 1u], out);
        }
        return;
    }
    // Rows whose input is constant (their activations may be unwritten).
    let cmask = mode & 0xffffu;
    var acc: array<vec4<f32>, MAX_ACC>;
    // The zero column of padding slots (never overwritten: staging writes columns < S).
    for (var v = lid; v < RV; v += WG) {
        ys[S * RV + v] = vec4<f32>(0.0);
    }
    let grp = lid / G;
    let lane = lid % G;
    // Fast tiles: z = c_r·csum[j], no staging, no gather (`fast` is workgroup-uniform).
    if (fast) {
        for (var t = 0u; t < T; t++) {
            let j = block * (WG * T) + t * WG + lid;
            if (j < n) {
                let cs = csum[j];
                for (var v = 0u; v < RV; v++) {
                    let c4 = vec4<f32>(wg_c[4u * v], wg_c[4u * v + 1u], wg_c[4u * v + 2u],
                        wg_c[4u * v + 3u]);
                    acc[t * RV + v] = c4 * cs;
                }
            }
        }
    }
    // Unrolled staging, per row: the offset its loads read (a row that does not read y_in
    // reads the first row that does) and, per vec4 of rows, the value standing for those
    // that do not (c for a constant row, 0 past the active count) and where it does.
    var src: array<u32, MAX_R>;
    var sub: array<vec4<f32>, MAX_RV>;
    var subbed: array<vec4<bool>, MAX_RV>;
    if (STAGE_UNROLL > 1u) {
        let reads = ~cmask & ((1u << rows) - 1u);
        // Some row reads y_in in a tile that stages (else it would be fast); min: in bounds.
        let first = min(firstTrailingBit(reads), rows - 1u);
        var reader = base[0];
        for (var r = 1u; r < 4u * RV; r++) {
            reader = select(reader, base[r], r == first);
        }
        for (var v = 0u; v < RV; v++) {
            for (var k = 0u; k < 4u; k++) {
                let r = 4u * v + k;
                let own = (reads & (1u << r)) != 0u;
                src[r] = select(reader, base[r], own);
                sub[v][k] = select(0.0, wg_c[r], (cmask & (1u << r)) != 0u);
                subbed[v][k] = !own;
            }
        }
    }
    // Segments together: each segment's lane's first word and end in this slice. With
    // PREFETCH_BOUNDS they are loaded a slice ahead (slice 0's here, before its staging).
    var lo: array<u32, MAX_T>;
    var hi: array<u32, MAX_T>;
    if (SEGMENTS_TOGETHER && PREFETCH_BOUNDS && !fast) {
        for (var t = 0u; t < T; t++) {
            let q = seg_index(block, 0u, t, grp);
            lo[t] = seg[q] + lane;
            hi[t] = seg[q + 1u];
        }
    }
    for (var sl = 0u; sl < select(params.slices, 0u, fast); sl++) {
        let c0 = sl * S;
        let width = min(S, n - c0);
        if (STAGE_UNROLL > 1u) {
            for (var c = lid; c < width; c += WG * STAGE_UNROLL) {
                // Every load of the turn first (no branch), then the stores within the slice.
                var q: array<vec4<f32>, MAX_UNROLL * MAX_RV>;
                for (var u = 0u; u < STAGE_UNROLL; u++) {
                    let cu = c0 + min(c + u * WG, width - 1u);
                    for (var v = 0u; v < RV; v++) {
                        let r = 4u * v;
                        q[u * RV + v] = vec4<f32>(y_in[src[r] + cu], y_in[src[r + 1u] + cu],
                            y_in[src[r + 2u] + cu], y_in[src[r + 3u] + cu]);
                    }
                }
                for (var u = 0u; u < STAGE_UNROLL; u++) {
                    let cu = c + u * WG;
                    if (cu < width) {
                        for (var v = 0u; v < RV; v++) {
                            ys[cu * RV + v] = select(q[u * RV + v], sub[v], subbed[v]);
                        }
                    }
                }
            }
        } else {
            for (var c = lid; c < width; c += WG) {
                for (var v = 0u; v < RV; v++) {
                    var q = vec4<f32>(0.0);
                    for (var k = 0u; k < 4u; k++) {
                        let r = 4u * v + k;
                        if (r < rows) {
                            // A constant row's activations may be unwritten: c stands for them.
                            if ((cmask & (1u << r)) != 0u) {
                                q[k] = wg_c[r];
                            } else {
                                q[k] = y_in[base[r] + c0 + c];
                            }
                        }
                    }
                    ys[c * RV + v] = q;
                }
            }
        }
        workgroupBarrier();
        if (SEGMENTS_TOGETHER) {
            // The bounds (unless loaded a slice ahead), and the most turns any segment takes.
            var turns = 0u;
            for (var t = 0u; t < T; t++) {
                if (!PREFETCH_BOUNDS) {
                    let q = seg_index(block, sl, t, grp);
                    lo[t] = seg[q] + lane;
                    hi[t] = seg[q + 1u];
                }
                turns = max(turns, (hi[t] - (lo[t] - lane) + G - 1u) / G);
            }
            for (var k = 0u; k < turns; k++) {
                for (var t = 0u; t < T; t++) {
                    let e = lo[t] + k * G;
                    if (e < hi[t]) {
                        let p = w_pos[e];
                        if (PACKED) {
                            let c0 = p & 0xffffu;
                            let c1 = p >> 16u;
                            for (var v = 0u; v < RV; v++) {
                                acc[t * RV + v] += ys[c0 * RV + v] + ys[c1 * RV + v];
                            }
                        } else {
                            let w = w_val[e];
                            for (var v = 0u; v < RV; v++) {
                                acc[t * RV + v] += ys[p * RV + v] * w;
                            }
                        }
                    }
                }
            }
            // The next slice's bounds, in flight across the barrier and its staging.
            if (PREFETCH_BOUNDS && sl + 1u < params.slices) {
                for (var t = 0u; t < T; t++) {
                    let q = seg_index(block, sl + 1u, t, grp);
                    lo[t] = seg[q] + lane;
                    hi[t] = seg[q + 1u];
                }
            }
        }
        for (var t = 0u; t < select(T, 0u, SEGMENTS_TOGETHER); t++) {
            let q = seg_index(block, sl, t, grp);
            let hi = seg[q + 1u];
            if (SLICE_SUMS) {
                var p0 = vec4<f32>(0.0);
                var p1 = vec4<f32>(0.0);
                var p2 = vec4<f32>(0.0);
                var p3 = vec4<f32>(0.0);
                for (var e = seg[q] + lane; e < hi; e += G) {
                    let p = w_pos[e];
                    if (PACKED) {
                        let a = (p & 0xffffu) * RV;
                        let b = (p >> 16u) * RV;
                        p0 += ys[a] + ys[b];
                        if (RV > 1u) {
                            p1 += ys[a + 1u] + ys[b + 1u];
                        }
                        if (RV > 2u) {
                            p2 += ys[a + 2u] + ys[b + 2u];
                        }
                        if (RV > 3u) {
                            p3 += ys[a + 3u] + ys[b + 3u];
                        }
                    } else {
                        let w = w_val[e];
                        let a = p * RV;
                        p0 += ys[a] * w;
                        if (RV > 1u) {
                            p1 += ys[a + 1u] * w;
                        }
                        if (RV > 2u) {
                            p2 += ys[a + 2u] * w;
                        }
                        if (RV > 3u) {
                            p3 += ys[a + 3u] * w;
                        }
                    }
                }
                acc[t * RV] += p0;
                if (RV > 1u) {
                    acc[t * RV + 1u] += p1;
                }
                if (RV > 2u) {
                    acc[t * RV + 2u] += p2;
                }
                if (RV > 3u) {
                    acc[t * RV + 3u] += p3;
                }
                continue;
            }
            for (var e = seg[q] + lane; e < hi; e += G) {
                let p = w_pos[e];
                if (PACKED) {
                    let c0 = p & 0xffffu;
                    let c1 = p >> 16u;
                    for (var v = 0u; v < RV; v++) {
                        acc[t * RV + v] += ys[c0 * RV + v] + ys[c1 * RV + v];
                    }
                } else {
                    let w = w_val[e];
                    for (var v = 0u; v < RV; v++) {
                        acc[t * RV + v] += ys[p * RV + v] * w;
                    }
                }
            }
        }
        workgroupBarrier();
    }
    // Constancy: invocation 0's outputs at column block·B (< n) are the block's references.
    if (CONSTANT_ROWS) {
        if (lid == 0u) {
            for (var v = 0u; v < RV; v++) {
                var z4 = acc[v];
                if (PACKED) {
                    z4 *= params.weight;
                }
                for (var k = 0u; k < 4u; k++) {
                    wg_ref[4u * v + k] = out_bits(activate(z4[k]));
                }
            }
        }
        workgroupBarrier();
    }
    // Bits 0..15: rows with a nonzero output; bits 16..31: rows with an output unlike
    // their reference.
    var any = 0u;
    for (var t = 0u; t < T; t++) {
        let j = block * (WG * T) + t * WG + lid;
        if (j < n) {
            for (var v = 0u; v < RV; v++) {
                var z4 = acc[t * RV + v];
                if (PACKED) {
                    z4 *= params.weight;
                }
                for (var k = 0u; k < 4u; k++) {
                    let r = 4u * v + k;
                    if (r < rows) {
                        let out = activate(z4[k]);
                        y_out[base[r] + j] = out;
                        if (out != 0.0) {
                            any |= 1u << r;
                        }
                        if (CONSTANT_ROWS && out_bits(out) != wg_ref[r]) {
                            any |= 1u << (16u + r);
                        }
                    }
                }
            }
        }
    }
    if (any != 0u) {
        atomicOr(&wg_any, any);
    }
    workgroupBarrier();
    let all = atomicLoad(&wg_any);
    // One invocation per row (a workgroup smaller than the tile's rows takes several).
    for (var r = lid; r < rows; r += WG) {
        if ((all & (1u << r)) != 0u && (smask & (1u << r)) == 0u) {
            atomicOr(&flags[s0 + r], 1u);
            atomicOr(&pos[s0 + r], 1u);
        }
        if (CONSTANT_ROWS) {
            let k = ids[s0 + r] * 4u + params.half * 2u;
            let mixed = (all & (1u << (16u + r))) != 0u;
            atomicMin(&konst[k], wg_ref[r]);
            atomicMax(&konst[k + 1u], select(wg_ref[r], 0xffffffffu, mixed));
        }
    }
}
