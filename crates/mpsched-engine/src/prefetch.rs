//! Software prefetch: a hint that the caller will soon read some memory, so the load that
//! would stall on a cache miss is started early, while other work runs.
//!
//! At scale (thousands of flows) the state one packet touches has left the caches by the
//! time the packet's next event comes: the event loop knows which packets come next (a link's
//! pipe is in arrival order) and asks for their state ahead of time. A hint never changes
//! what a program computes; on targets without one it compiles to nothing.

/// Bytes of a cache line (x86-64 and most AArch64 parts).
pub const CACHE_LINE_BYTES: usize = 64;

/// Starts loading the cache line that holds `ptr` into every cache level.
#[inline(always)]
pub fn line<T: ?Sized>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address, and reads nothing
    // the program can observe. SSE is part of the x86-64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(ptr as *const u8 as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Starts loading the first `max_lines` cache lines of `*value` (fewer if it is smaller).
#[inline(always)]
pub fn object<T: ?Sized>(value: &T, max_lines: usize) {
    let start = value as *const T as *const u8;
    let bytes = std::mem::size_of_val(value);
    let lines = bytes.div_ceil(CACHE_LINE_BYTES).min(max_lines);
    for i in 0..lines {
        line(start.wrapping_add(i * CACHE_LINE_BYTES));
    }
}
