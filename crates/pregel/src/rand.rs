//! A small, fast, non-cryptographic random source for jitter.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Mix in the address of a stack value so threads differ.
    let local = 0_u8;
    (nanos ^ (&local as *const u8 as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// A uniform float in `[0, 1)` (xorshift64*).
pub(crate) fn unit() -> f64 {
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1_u64 << 53) as f64
    })
}
