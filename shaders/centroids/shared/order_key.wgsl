// The order in which K-Means' empty-cluster repair takes rows: squared distance descending by
// Rust's f32::total_cmp, then row ascending. Shared by the host-driven select (farthest.wgsl)
// and the repair on the device (repair.wgsl), so both list the rows the host would sort.

// The f32 whose bits are `bits`, as a u32 that orders as Rust's f32::total_cmp does (the same
// order the host would sort the distances in): negative values flipped, positive ones above.
fn order_key(bits: u32) -> u32 {
    if (bits & 0x80000000u) != 0u {
        return ~bits;
    }
    return bits | 0x80000000u;
}
