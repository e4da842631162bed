//! [`PeakTrackingAllocator`]: a global-allocator wrapper counting live and peak heap
//! bytes, so benchmarks (and embedding apps) can report the peak memory of a query.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: PeakTrackingAllocator<mimalloc::MiMalloc> =
//!     PeakTrackingAllocator::new(mimalloc::MiMalloc);
//! let base = ALLOCATOR.reset_peak();
//! run_query();
//! let peak_bytes = ALLOCATOR.peak().saturating_sub(base);
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Wraps allocator `A`, counting live bytes and their high-water mark.
#[derive(Debug)]
pub struct PeakTrackingAllocator<A> {
    inner: A,
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl<A> PeakTrackingAllocator<A> {
    /// Counts the allocations of `inner`.
    pub const fn new(inner: A) -> Self {
        Self {
            inner,
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Heap bytes allocated and not yet freed.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Highest [`Self::live`] since the last [`Self::reset_peak`].
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Restarts the high-water mark at the current live bytes, which it returns
    /// (subtract it from a later [`Self::peak`] to get what a piece of work added).
    pub fn reset_peak(&self) -> usize {
        let live = self.live();
        self.peak.store(live, Ordering::Relaxed);
        live
    }

    fn grew(&self, bytes: usize) {
        let live = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    fn shrank(&self, bytes: usize) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `inner` with the caller's arguments; the counters
// are plain atomics.
unsafe impl<A: GlobalAlloc> GlobalAlloc for PeakTrackingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.inner.dealloc(ptr, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                self.grew(new_size - layout.size());
            } else {
                self.shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// `mi_option_purge_delay`: its index in `mi_option_e` of mimalloc 2.x and 3.x
/// (`include/mimalloc.h`; libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc keep freed memory committed for `delay` before returning it to the
/// operating system (its default is 10 ms). A query engine frees and re-allocates
/// megabytes per query; returned pages come back zero-filled by the kernel on their
/// next use, which measured ~8% of a primary-key union read's CPU (`clear_page_erms`
/// under `perf`). Only meaningful where mimalloc is the global allocator.
pub fn delay_mimalloc_purge(delay: std::time::Duration) {
    let millis =
        std::os::raw::c_long::try_from(delay.as_millis()).unwrap_or(std::os::raw::c_long::MAX);
    // SAFETY: mi_option_set only stores an integer option; mimalloc reads this one
    // each time it decides to purge, so setting it at any time is allowed.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, millis) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    #[test]
    fn counts_live_and_peak_bytes() {
        let a = PeakTrackingAllocator::new(System);
        let layout = Layout::from_size_align(1000, 8).unwrap();
        unsafe {
            let p = a.alloc(layout);
            assert_eq!(a.live(), 1000);
            let p = a.realloc(p, layout, 3000);
            assert_eq!((a.live(), a.peak()), (3000, 3000));
            a.dealloc(p, Layout::from_size_align(3000, 8).unwrap());
        }
        assert_eq!((a.live(), a.peak()), (0, 3000));
        assert_eq!(a.reset_peak(), 0);
        assert_eq!(a.peak(), 0);
    }
}
