// The stream kernel's tiles taken by units of UNIT lanes (fused/stream under UNITS), with no
// barrier: src/fused/stream.rs cuts the tiles for UNIT invocations, and UNIT divides the
// subgroup size, so a unit's lanes are consecutive lanes of one subgroup. Unit u (slots
// u·UNIT .. of the grid, slots numbered subgroup by subgroup) takes tiles u, u + U, …
// (U: the grid's units). Lane i of a unit takes the tile's entries i·EPL .. i·EPL + EPL,
// and finds the tile row of its first entry by counting the STARTs in the lanes before it
// (a subgroup scan: no lead rows to load). Then:
// 1. its products summed per row segment within the lane; each entry's segment total
//    within the lane kept beside it (registers), with its row's factor where the row starts;
// 2. the row it starts last (if any) completed by the chain of heads after it (chain_sum:
//    a tile's rows end in it, padding ends a chain, and the next unit's first lane starts a
//    row), its scale (total · factor) passed forward to the lanes holding the rest of the
//    row (a segmented broadcast by shuffles: log₂ of the subgroup size rounds at most);
// 3. each entry added to the workgroup copy of w at its row's scale.
// No state crosses tiles, so units never wait on one another: the workgroup meets only
// before the first tile (w zeroed, long rows) and before the flush.
// XTY: an entry's scale is its row's factor alone (no sums, no shuffles).

// Every tile of this invocation's unit. Call in uniform control flow (the loop runs while
// any lane of the subgroup has a tile; lanes past the last take padding).
fn unit_tiles(wid: u32, nwg: u32, sg_lane: u32, sg_size: u32, sg_id: u32) {
    let slot = sg_id * sg_size + sg_lane;
    let lane = slot % UNIT;
    let stride = nwg * (WG / UNIT);
    var tile = (wid * WG + slot) / UNIT;
    loop {
        let has_tile = tile < params.ntiles;
        if !subgroupAny(has_tile) {
            break;
        }
        // A lane of no tile takes a tile of no entries: padding alone, nothing loaded.
        var t = vec4<u32>(0u);
        if has_tile {
            t = tiles[tile];
        }
        unit_tile(load_entries(tile, t, lane), t.z, sg_lane, sg_size);
        tile += stride;
    }
}

// The tile row of this lane's first entry: the rows begun in the unit's lanes before it,
// less one where that entry continues a row (a tile's first entry starts one). Call in
// uniform control flow.
fn unit_lead(e: Entries, sg_lane: u32) -> u32 {
    var starts = 0u;
    for (var j = 0u; j < EPL; j++) {
        let key = e.k[j / 4u][j % 4u];
        if key != PAD && (key & START) != 0u {
            starts += 1u;
        }
    }
    let before = subgroupExclusiveAdd(starts);
    let unit_before = subgroupShuffle(before, sg_lane - sg_lane % UNIT);
    let k0 = e.k[0].x;
    let continues = k0 != PAD && (k0 & START) == 0u;
    return before - unit_before - u32(continues);
}

// One lane's share of a tile: `e` its entries, `first` the tile's first index into `rows`.
// Call in uniform control flow.
fn unit_tile(e: Entries, first: u32, sg_lane: u32, sg_size: u32) {
    // Per entry: its row's factor from the entry where the row starts (the head's rows:
    // none, except under XTY) and, without XTY, the total of its row segment in this lane.
    var fj: array<f32, 8>;
    var tot: array<f32, 8>;
    // Positions of this lane's first and last START (EPL: none).
    var fs = EPL;
    var ls = EPL;
    var row = unit_lead(e, sg_lane);
    var f = 0.0;
#ifdef XTY
    // The head's row (begun in an earlier lane) needs its factor here.
    let k0 = e.k[0].x;
    if k0 != PAD && (k0 & START) == 0u {
        f = tile_factor(first, row);
    }
#endif
    var run = 0.0;
    var h = 0.0;
    for (var j = 0u; j < EPL; j++) {
        let key = e.k[j / 4u][j % 4u];
        if key != PAD && (key & START) != 0u {
            if j > 0u {
                row += 1u;
            }
            if fs == EPL {
                fs = j;
                h = run;
            }
            ls = j;
            run = 0.0;
            f = tile_factor(first, row);
        }
        fj[j] = f;
#ifndef XTY
        if key != PAD {
            run += e.x[j / 4u][j % 4u] * y_col(key & ~START);
        }
        tot[j] = run;
#endif
    }
#ifdef XTY
    for (var j = 0u; j < EPL; j++) {
        let key = e.k[j / 4u][j % 4u];
        if key != PAD {
            w_add(key & ~START, e.x[j / 4u][j % 4u] * fj[j]);
        }
    }
#else
    let started = fs < EPL;
    if !started {
        h = run;
    }
    // Each entry's segment total in this lane: the running sum at its segment's last entry.
    var end = tot[EPL - 1u];
    for (var i = 0u; i < EPL; i++) {
        let j = EPL - 1u - i;
        let t = end;
        if j > 0u && e.k[j / 4u][j % 4u] != PAD && (e.k[j / 4u][j % 4u] & START) != 0u {
            end = tot[j - 1u];
        }
        tot[j] = t;
    }
    // 2. The row started last, completed by the chain of heads after this lane.
    let ends = started || e.k[0].x == PAD;
    let c = chain_sum(h, ends, sg_lane, sg_size);
    let after = subgroupShuffleDown(c.x, 1u);
    var last = 0.0;
    if started {
        var sum = run;
        if sg_lane + 1u < sg_size {
            sum += after;
        }
        last = sum * f;
    }
    // The head's scale: `last` of the nearest lane before with a START (a unit's first lane
    // starts a row or holds padding alone, so a head never looks past its unit).
    var sv = subgroupShuffleUp(last, 1u);
    var sf = subgroupShuffleUp(u32(started), 1u) != 0u || sg_lane == 0u;
    for (var d = 1u; d < sg_size; d <<= 1u) {
        if !subgroupAny(!sf) {
            break;
        }
        let vo = subgroupShuffleUp(sv, d);
        let fo = subgroupShuffleUp(u32(sf), d) != 0u;
        if !sf && sg_lane >= d {
            sv = vo;
            sf = fo;
        }
    }
    // 3. The scatter.
    for (var j = 0u; j < EPL; j++) {
        let key = e.k[j / 4u][j % 4u];
        if key != PAD {
            var s = sv;
            if j >= ls {
                s = last;
            } else if j >= fs {
                s = tot[j] * fj[j];
            }
            w_add(key & ~START, e.x[j / 4u][j % 4u] * s);
        }
    }
#endif
}
