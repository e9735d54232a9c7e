//! A cache hint shared by the batch loops of the timer wheel and the member expiry table.

/// Asks the CPU to start loading the cache line of `p`. A hint only: it never faults and
/// never changes behaviour.
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache (SSE is baseline on x86_64), and `p` is
    // a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
