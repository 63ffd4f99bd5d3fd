// Dispatch-overhead probe: one workgroup that writes one word.
@group(0) @binding(0) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
    sink[0] = wid.x;
}
