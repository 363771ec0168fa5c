//! No allocation from a length header: `*2305843009213693954` (2^61 + 2,
//! whose 8-byte-element allocation would overflow) and friends must cost
//! nothing but an error or an "incomplete", whatever the limits.
//!
//! A counting global allocator records the largest single allocation made
//! while decoding. Its own test binary, so other tests do not disturb it.

use resp::{Decoded, Decoder, Limits};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::cell::Cell;

thread_local! {
    /// Only the measuring thread's allocations count (the test harness has others).
    static ON: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    ON.try_with(|c| c.get()).unwrap_or(false)
}

struct Counting;
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            LARGEST.fetch_max(layout.size(), Ordering::SeqCst);
            TOTAL.fetch_add(layout.size(), Ordering::SeqCst);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            LARGEST.fetch_max(new_size, Ordering::SeqCst);
            TOTAL.fetch_add(new_size, Ordering::SeqCst);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// (largest single allocation, total bytes allocated) while running `f`.
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    // The counters are shared: run measured code on one thread at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    LARGEST.store(0, Ordering::SeqCst);
    TOTAL.store(0, Ordering::SeqCst);
    ON.with(|c| c.set(true));
    let out = f();
    ON.with(|c| c.set(false));
    (out, LARGEST.load(Ordering::SeqCst), TOTAL.load(Ordering::SeqCst))
}

const HUGE_HEADERS: &[&[u8]] = &[
    b"*2305843009213693954\r\n",
    b"*2305843009213693954\r\n:1\r\n:2\r\n",
    b"%2305843009213693954\r\n+a\r\n",
    b"~2305843009213693954\r\n",
    b">2305843009213693954\r\n",
    b"|2305843009213693954\r\n",
    b"*4294967295\r\n",
    b"$2305843009213693954\r\n",
    b"$536870912\r\nabc",
    b"*1\r\n*1\r\n$2305843009213693954\r\nab",
    b"=2305843009213693954\r\ntxt:",
];

#[test]
fn huge_headers_do_not_allocate_with_default_limits() {
    for input in HUGE_HEADERS {
        let (r, largest, total) = measure(|| {
            let mut d = Decoder::new();
            let r = d.decode(input);
            (r.is_ok(), matches!(r, Ok(Decoded::Incomplete { .. })))
        });
        // An error message is a small string; nothing else is allocated.
        assert!(largest < 256 && total < 1024, "{:?}: largest {largest}, total {total}, {r:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn huge_headers_do_not_allocate_without_limits() {
    let l = Limits { max_depth: 1024, max_bulk_len: u64::MAX, max_aggregate_len: u64::MAX };
    for input in HUGE_HEADERS {
        let (r, largest, total) = measure(|| Decoder::with_limits(l).decode(input));
        assert!(matches!(r, Ok(Decoded::Incomplete { .. })), "{:?}: {r:?}", String::from_utf8_lossy(input));
        // The stack of open aggregates is the only allocation (a few frames).
        assert!(largest < 256 && total < 1024, "{:?}: largest {largest}, total {total}", String::from_utf8_lossy(input));
    }
}

/// A complete value allocates in proportion to its bytes, not its headers:
/// an array of 100 000 elements whose header claims exactly that is fine,
/// and so is the build, but the allocation stays close to the input size.
#[test]
fn building_allocates_in_proportion_to_the_input() {
    let mut input = b"*100000\r\n".to_vec();
    for _ in 0..100_000 {
        input.extend_from_slice(b"_\r\n");
    }
    let (r, _largest, total) = measure(|| Decoder::new().decode(&input));
    assert!(matches!(r, Ok(Decoded::Complete { consumed, .. }) if consumed == input.len()));
    // One Value per element (size_of::<Value>() bytes each) and nothing more.
    let per_value = std::mem::size_of::<resp::Value>();
    assert!(total <= 100_000 * per_value + 4096, "total {total}, {} per value", per_value);
}
