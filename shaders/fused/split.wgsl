// The scatter of the column-split sequence (src/fused/split.rs): w += Xᵀp with p the row
// scales of fused/split_dots (p = α·v ⊙ (X·y)) and w already β·z. X is laid out by row tiles,
// each tile's entries sorted by column (then row), packed as key = column << ROW_BITS | the
// row's offset in its tile, and cut into chunks (first entry, end, the tile's first row) of
// at most EPL·WG entries. A workgroup takes chunks k = group, group + G, …; in a chunk each
// subgroup takes EPL rounds of sg_size consecutive entries (subgroup s: entries
// s·sg_size·EPL + j·sg_size + lane), forms p[row]·x per entry and sums runs of equal columns
// by a segmented suffix sum across the subgroup; the first lane of a run adds the run's sum
// to w, except the round's last run when it reaches the round's last lane: that one is
// carried into the next round (all lanes hold the carry alike) and joins its first run when
// the column is the same, so a column's run over several rounds costs one add. Runs are long
// (a tile's column holds about row_tile × its density entries), so adds are few and never
// meet in workgroup memory: no per-entry compare-exchange and no flush of n columns.
// Without SEGMENTED (no subgroup operations) each invocation takes EPL consecutive entries
// of the chunk and adds each run of equal columns among them once.
// KEY16 (with SEGMENTED; src/fused/split.rs, build16): each slot a 16-bit word, two per key
// word (slot i in word i / 2, low half first): a row offset (tiles of at most 32,768 rows)
// beside its value, or MARKER16, a marker whose value slot holds a column's bits. Every
// subgroup's share of a chunk (EPL·sg_size slots, the layout built for the adapter's one
// subgroup size) starts with a marker, and one precedes each change of column; a slot's
// column is the latest marker's at or before it (a ballot over the round, else the column in
// effect at the previous round's end). 6 bytes per entry instead of 8. KEY16 takes subgroup operations
// in any case; without SEGMENTED (never planned) each entry adds on its own.
#import shared/atomic_f32
#ifdef SEGMENTED
#import fused/run_sum
#endif

override WG: u32 = 256u;
// Entries per invocation and chunk: a chunk holds at most EPL·WG entries.
override EPL: u32 = 8u;
// Bits of a key holding the row offset (below 32).
override ROW_BITS: u32 = 16u;

// Column of an absent entry (past the chunk's end): never a column (columns < 2^24).
const NONE: u32 = 0xffffffffu;
const MARKER16: u32 = 0x8000u;

struct Params {
    nchunks: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> keys: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> p: array<f32>;
@group(0) @binding(5) var<storage, read_write> accum: array<AtomicF32>;

#ifdef KEY16
// The highest lane at or below `lane` whose bit is set in the ballot `b`; -1 when none.
fn last_set_at_or_below(b: vec4<u32>, lane: u32) -> i32 {
    let bit = lane & 31u;
    let top = i32(lane >> 5u);
    for (var k = top; k >= 0; k--) {
        var word = b[k];
        if k == top {
            word &= select((2u << bit) - 1u, 0xffffffffu, bit == 31u);
        }
        if word != 0u {
            return k * 32 + i32(firstLeadingBit(word));
        }
    }
    return -1;
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
#ifdef SEGMENTED
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
#else
#ifdef KEY16
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
#endif
#endif
) {
    let mask = (1u << ROW_BITS) - 1u;
#ifdef SEGMENTED
    let first = sg_id * sg_size * EPL + sg_lane;
    let step = sg_size;
#else
#ifdef KEY16
    let first = sg_id * sg_size * EPL + sg_lane;
    let step = sg_size;
#else
    let first = tid * EPL;
    let step = 1u;
#endif
#endif
    // k is uniform across the workgroup, j below too: the subgroup operations are reached by
    // every lane.
    for (var k = wid.x; k < params.nchunks; k += nwg.x) {
        let ch = chunks[k];
        // The run carried from the previous round (or entry): its column (NONE: none) and sum.
        var ccol = NONE;
        var csum = 0.0;
#ifdef KEY16
        // The column in effect after the previous round (uniform; the chunk starts with a
        // marker, so it is set before any entry needs it).
        var cur = NONE;
#endif
        for (var j = 0u; j < EPL; j++) {
            let i = ch.x + first + j * step;
            var col = NONE;
            var t = 0.0;
#ifdef KEY16
            var mark = false;
            var mcol = 0u;
            if i < ch.y {
                let word = (keys[i >> 1u] >> ((i & 1u) << 4u)) & 0xffffu;
                let x = vals[i];
                if word == MARKER16 {
                    mark = true;
                    mcol = bitcast<u32>(x);
                } else {
                    t = x * p[ch.z + word];
                }
            }
            let src = last_set_at_or_below(subgroupBallot(mark), sg_lane);
            let marked = subgroupShuffle(mcol, u32(max(src, 0)));
            if i < ch.y {
                col = select(cur, marked, src >= 0);
            }
            // Columns rise within a chunk: the last one present is the largest.
            cur = subgroupMax(select(0u, col, col != NONE));
#else
            if i < ch.y {
                let key = keys[i];
                col = key >> ROW_BITS;
                t = vals[i] * p[ch.z + (key & mask)];
            }
#endif
#ifdef SEGMENTED
            // The carry joins the round's first run (lane 0 heads it) when it is the same
            // column, else lane 0 adds it now.
            let first_col = subgroupShuffle(col, 0u);
            if ccol != NONE && sg_lane == 0u {
                if ccol == first_col {
                    t += csum;
                } else {
                    accum_add(ccol, csum);
                }
            }
            // Lane i: its run's sum from i on.
            t = run_suffix_sum(col, t, col != NONE, sg_lane, sg_size);
            let prev = subgroupShuffleUp(col, 1u);
            let head = sg_lane == 0u || prev != col;
            // The round's last run goes on into the next round when it reaches the last lane.
            let last_col = subgroupShuffle(col, sg_size - 1u);
            let h = subgroupMax(select(0u, sg_lane, head));
            let h_sum = subgroupShuffle(t, h);
            let carries = last_col != NONE;
            if head && col != NONE && !(carries && sg_lane == h) {
                accum_add(col, t);
            }
            if carries {
                ccol = last_col;
                csum = h_sum;
            } else {
                ccol = NONE;
                csum = 0.0;
            }
#else
#ifdef KEY16
            if col != NONE {
                accum_add(col, t);
            }
#else
            if col != ccol {
                if ccol != NONE {
                    accum_add(ccol, csum);
                }
                ccol = col;
                csum = 0.0;
            }
            csum += t;
#endif
#endif
        }
#ifdef SEGMENTED
        if ccol != NONE && sg_lane == 0u {
            accum_add(ccol, csum);
        }
#else
        if ccol != NONE {
            accum_add(ccol, csum);
        }
#endif
    }
}
