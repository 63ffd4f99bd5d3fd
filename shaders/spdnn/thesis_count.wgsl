// spdnn.thesis_count: the thesis's scan(B_buffer), first half: the nonzeros of each row of
// the dense batch buffer (one workgroup per row; rows past the batch count 0), written to
// cnt (kept) and off (scanned in place into each row's first output entry), and whether the
// row is non-empty to flag (kept) and fpos (scanned into each row's place in the list).
override WG: u32 = 256u;

struct Params {
    rows: u32,
    width: u32,
    cap: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> buf: array<f32>;
@group(0) @binding(2) var<storage, read_write> cnt: array<u32>;
@group(0) @binding(3) var<storage, read_write> off: array<u32>;
@group(0) @binding(4) var<storage, read_write> flag: array<u32>;
@group(0) @binding(5) var<storage, read_write> fpos: array<u32>;

var<workgroup> wg_n: atomic<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = wid.y * nwg.x + wid.x;
    if (s >= params.cap) {
        return;
    }
    if (lid == 0u) {
        atomicStore(&wg_n, 0u);
    }
    workgroupBarrier();
    if (s < params.rows) {
        var n = 0u;
        let row = s * params.width;
        for (var j = lid; j < params.width; j += WG) {
            if (buf[row + j] != 0.0) {
                n += 1u;
            }
        }
        if (n != 0u) {
            atomicAdd(&wg_n, n);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let n = atomicLoad(&wg_n);
        let f = select(0u, 1u, n != 0u);
        cnt[s] = n;
        off[s] = n;
        flag[s] = f;
        fpos[s] = f;
    }
}
