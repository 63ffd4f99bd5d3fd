// Residency probe (src/gpu/calibrate.rs): a workgroup counts itself into `live` on entry and
// raises `peak` to the count it sees, holds its slot for HOLD dependent multiply-adds (no
// memory traffic), raises `peak` to the count it sees then, and leaves. Over a grid of many
// waves, `peak` is how many workgroups of WG invocations and SHARED_WORDS words of workgroup
// memory the device keeps resident at once.
override WG: u32 = 32u;
override SHARED_WORDS: u32 = 1u;
override HOLD: u32 = 1024u;

// live, peak.
@group(0) @binding(0) var<storage, read_write> counts: array<atomic<u32>, 2>;
// One value per workgroup, so the held loop and the workgroup memory are not elided.
@group(0) @binding(1) var<storage, read_write> sink: array<f32>;

var<workgroup> pad: array<u32, SHARED_WORDS>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    for (var i = lid; i < SHARED_WORDS; i += WG) {
        pad[i] = i + wid.x;
    }
    workgroupBarrier();
    if lid == 0u {
        atomicMax(&counts[1], atomicAdd(&counts[0], 1u) + 1u);
    }
    var x = f32(pad[(lid * 7u + 1u) % SHARED_WORDS] & 0xffu);
    for (var i = 0u; i < HOLD; i++) {
        x = fma(x, 0.999999, 1.0);
    }
    if lid == 0u {
        atomicMax(&counts[1], atomicLoad(&counts[0]));
        atomicSub(&counts[0], 1u);
        sink[wid.x % arrayLength(&sink)] = x;
    }
}
