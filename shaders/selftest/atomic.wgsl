// Self-test of shared/atomic_f32 and shared/atomic_f32_wg: every invocation adds x[i] to
// accum[i % BINS] directly, and to a workgroup bin whose total is then added to
// accum[BINS + i % BINS]. Both halves must equal the per-bin sums of x.
#import shared/atomic_f32
#import shared/atomic_f32_wg

override WG: u32 = 64u;
override BINS: u32 = 4u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> accum: array<AtomicF32>;

var<workgroup> wg_accum: array<atomic<u32>, BINS>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    for (var j = lid; j < BINS; j += WG) {
        atomicStore(&wg_accum[j], 0u);
    }
    workgroupBarrier();
    let i = gid.x;
    accum_add(i % BINS, x[i]);
    wg_accum_add(i % BINS, x[i]);
    workgroupBarrier();
    for (var j = lid; j < BINS; j += WG) {
        accum_add(BINS + j, wg_accum_load(j));
    }
}
