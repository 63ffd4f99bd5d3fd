// The software device's loop cap (gpu::loop_cap): one invocation counts the iterations it
// completes of a loop asked to run state[0] times and stores the count in state[1]. The trip
// count is read from memory so no compiler can fold the loop away; a device that ends loops
// early (llvmpipe: 65,535 iterations per invocation in all) stores fewer than asked.
@group(0) @binding(0) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let trips = state[0];
    var k = 0u;
    for (var i = 0u; i < trips; i++) {
        k += 1u;
    }
    state[1] = k;
}
