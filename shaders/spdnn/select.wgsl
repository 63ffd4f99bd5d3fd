// spdnn.select: after a layer of spdnn.sliced, builds the next active list: slot s with
// flags[s] ≠ 0 puts its row id at pos[s] (the exclusive scan of the flags) of ids_out; the
// scan's passes after the first are left to this kernel (params.deferred: pos[s] plus the
// totals of the blocks before s / SCAN_BLOCK is the scan, see ExclusiveScan::record_blocks;
// a workgroup's slots lie in one block, WG dividing SCAN_BLOCK, and it sums those totals
// itself), two dispatches fewer per layer with more than one block; the
// invocation of the last slot writes the new active count. Every slot then clears its flag
// and scan input for the next layer (each slot's pair is read and cleared by one
// invocation only, so no other invocation races with it). One invocation per slot.
// A surviving row's constancy words of the next layer (`konst[4·id + 2·half ..]`, see
// spdnn.sliced) are reset to (min = 0xffffffff, max = 0) for the atomics that layer adds.
// Scalar rows (SCALAR_ROWS): the chunk's rows carried as one value each, as (id, c bits)
// pairs; the list after layer l is `scal[l mod 2]`, its length `scount[l mod 3]` (three
// counts, so that one can be cleared while one is read and one is filled). When layer l's
// column sums are all one value s (params.advance), entry i of the list after l − 1 becomes
// c' = f(c·s·w) (the bias on z ≠ 0, the clamp, as spdnn.sliced's epilogue) and is
// appended to the list after l (spdnn.sliced appends the rows leaving at layer l there
// too) unless c' = 0 (the row died); one atomic per workgroup. Invocation 0 clears the
// count after l + 1 (last read before layer l; cleared after every layer, advancing or
// not) and adds the rows carried to `stats`.
// The last slot's invocation also sizes the next layer's spdnn.sliced dispatch (indirect
// arguments `args`): ⌈rows / tile rows⌉ · blocks workgroups for the new active count, plus
// the rows spdnn.rejoin may append (at most the scalar rows carried into this layer) when
// it follows (params.rejoin); x capped at params.max_x, y what covers the rest (the kernel
// skips workgroups past the active rows).
override WG: u32 = 256u;
override SCALAR_ROWS: bool = false;
// Elements per block of the scan (its offsets' granularity).
override SCAN_BLOCK: u32 = 1024u;
const YMAX: f32 = 32.0;

struct Params {
    cap: u32,
    // The half of `konst` the next layer writes.
    half: u32,
    // The layer just run, and 1 when its column sums are one value (scalar rows advance).
    layer: u32,
    advance: u32,
    // That value, the packed layer's weight (else 1), the bias.
    s: f32,
    weight: f32,
    bias: f32,
    // The `stats` word counting the rows carried through this layer.
    carried: u32,
    // Rows per tile and blocks of outputs of spdnn.sliced, the most workgroups per grid
    // dimension, and 1 when spdnn.rejoin follows.
    tile_rows: u32,
    blocks: u32,
    max_x: u32,
    rejoin: u32,
    // 1 when the totals of the scan's earlier blocks are still to be added (`totals`).
    deferred: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;
@group(0) @binding(3) var<storage, read> ids_in: array<u32>;
@group(0) @binding(4) var<storage, read_write> ids_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> count: array<u32>;
@group(0) @binding(6) var<storage, read_write> konst: array<u32>;
@group(0) @binding(7) var<storage, read> scal_in: array<u32>;
@group(0) @binding(8) var<storage, read_write> scal_out: array<u32>;
@group(0) @binding(9) var<storage, read_write> scount: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(11) var<storage, read_write> args: array<u32>;
@group(0) @binding(12) var<storage, read> totals: array<u32>;

var<workgroup> wg_n: atomic<u32>;
var<workgroup> wg_at: u32;
var<workgroup> wg_off: atomic<u32>;
var<workgroup> wg_offset: u32;

// spdnn.sliced's epilogue on a constant row's z.
fn activate(z: f32) -> f32 {
    var out = 0.0;
    if (z != 0.0) {
        out = clamp(z + params.bias, 0.0, YMAX);
    }
    return out;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = (wid.y * nwg.x + wid.x) * WG + lid;
    // The offset of this workgroup's scan block: the totals of the blocks before it.
    var offset = 0u;
    if (params.deferred != 0u) {
        if (lid == 0u) {
            atomicStore(&wg_off, 0u);
        }
        workgroupBarrier();
        let block = (wid.y * nwg.x + wid.x) * WG / SCAN_BLOCK;
        var part = 0u;
        for (var k = lid; k < block; k += WG) {
            part += totals[k];
        }
        atomicAdd(&wg_off, part);
        workgroupBarrier();
        if (lid == 0u) {
            wg_offset = atomicLoad(&wg_off);
        }
        offset = workgroupUniformLoad(&wg_offset);
    }
    if (s < params.cap) {
        let f = flags[s];
        let p = pos[s] + offset;
        if (s == params.cap - 1u) {
            count[0] = p + f;
            var rows = p + f;
            if (SCALAR_ROWS && params.rejoin != 0u) {
                rows += atomicLoad(&scount[(params.layer + 2u) % 3u]);
            }
            let groups = (rows + params.tile_rows - 1u) / params.tile_rows * params.blocks;
            let x = min(groups, params.max_x);
            args[0] = x;
            args[1] = select(0u, (groups + x - 1u) / max(x, 1u), x > 0u);
            args[2] = 1u;
        }
        if (f != 0u) {
            let id = ids_in[s];
            ids_out[p] = id;
            let k = id * 4u + params.half * 2u;
            konst[k] = 0xffffffffu;
            konst[k + 1u] = 0u;
        }
        flags[s] = 0u;
        pos[s] = 0u;
    }
    if (!SCALAR_ROWS) {
        return;
    }
    let l = params.layer;
    if (s == 0u) {
        atomicStore(&scount[(l + 1u) % 3u], 0u);
    }
    if (params.advance == 0u) {
        return;
    }
    let n_in = atomicLoad(&scount[(l + 2u) % 3u]);
    if (s == 0u) {
        atomicAdd(&stats[params.carried], n_in);
    }
    if (lid == 0u) {
        atomicStore(&wg_n, 0u);
    }
    workgroupBarrier();
    var id = 0u;
    var out = 0.0;
    var at = 0u;
    if (s < n_in) {
        id = scal_in[2u * s];
        out = activate(bitcast<f32>(scal_in[2u * s + 1u]) * params.s * params.weight);
        if (out != 0.0) {
            at = atomicAdd(&wg_n, 1u);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        wg_at = atomicAdd(&scount[l % 3u], atomicLoad(&wg_n));
    }
    let base = workgroupUniformLoad(&wg_at);
    if (out != 0.0) {
        scal_out[2u * (base + at)] = id;
        scal_out[2u * (base + at) + 1u] = bitcast<u32>(out);
    }
}
