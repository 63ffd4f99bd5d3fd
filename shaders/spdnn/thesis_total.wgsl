// spdnn.thesis_total: after the scans of spdnn.thesis_count's outputs, the batch's totals:
// tot[0] = nonzeros, tot[1] = non-empty rows (the last slot's scanned value plus its own).
struct Params {
    cap: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> cnt: array<u32>;
@group(0) @binding(2) var<storage, read> off: array<u32>;
@group(0) @binding(3) var<storage, read> flag: array<u32>;
@group(0) @binding(4) var<storage, read> fpos: array<u32>;
@group(0) @binding(5) var<storage, read_write> tot: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let last = params.cap - 1u;
    tot[0] = off[last] + cnt[last];
    tot[1] = fpos[last] + flag[last];
}
