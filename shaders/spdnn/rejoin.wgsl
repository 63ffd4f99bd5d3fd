// spdnn.rejoin: after spdnn.select of a layer l whose next layer's column sums are not one
// value (or the last layer), every scalar row (the list after l, `scal[l mod 2]`, length
// `scount[l mod 3]`, see spdnn.select) goes back to the active list: appended after the
// rows spdnn.select placed (one atomic on the count per workgroup), its constancy words of
// layer l (half l mod 2, which the next layer and the host's readback take c from) set to
// c, those of the next layer reset. Its activations are never rebuilt: every reader of a
// row whose constancy words call it constant takes c from them (see spdnn.sliced).
override WG: u32 = 256u;

struct Params {
    // The chunk's rows, and layer l.
    cap: u32,
    layer: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> scal: array<u32>;
@group(0) @binding(2) var<storage, read> scount: array<u32>;
@group(0) @binding(3) var<storage, read_write> ids_out: array<u32>;
@group(0) @binding(4) var<storage, read_write> count: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> konst: array<u32>;

var<workgroup> wg_n: atomic<u32>;
var<workgroup> wg_at: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    let n = min(scount[params.layer % 3u], params.cap);
    if (lid == 0u) {
        atomicStore(&wg_n, 0u);
    }
    workgroupBarrier();
    var at = 0u;
    if (i < n) {
        at = atomicAdd(&wg_n, 1u);
    }
    workgroupBarrier();
    if (lid == 0u) {
        wg_at = atomicAdd(&count[0], atomicLoad(&wg_n));
    }
    let base = workgroupUniformLoad(&wg_at);
    if (i < n) {
        let id = scal[2u * i];
        let c = scal[2u * i + 1u];
        ids_out[base + at] = id;
        let h = params.layer % 2u;
        konst[id * 4u + h * 2u] = c;
        konst[id * 4u + h * 2u + 1u] = c;
        konst[id * 4u + (1u - h) * 2u] = 0xffffffffu;
        konst[id * 4u + (1u - h) * 2u + 1u] = 0u;
    }
}
