//! The process's allocators. Rust code allocates through mimalloc (the `#[global_allocator]` in
//! `main.rs`); [`use_mimalloc_for_tree_sitter`] sends tree-sitter's C code there too.
//!
//! Why: tree-sitter calls libc `malloc`/`free` for every subtree and stack node it makes, and
//! parsing is the largest single cost of cold indexing. With glibc's allocator, `malloc`,
//! `_int_malloc`, `malloc_consolidate` and `free` took about 8 % of the CPU time of indexing a
//! `cargo vendor` tree; mimalloc does the same work in a fraction of that (see
//! `bench/index-bench.sh`, which prints both the indexing rate and the parse-only ceiling).
//!
//! This is the one place in sift with `unsafe` code: handing C function pointers to
//! tree-sitter's `ts_set_allocator`, and the four functions themselves, which call mimalloc's C
//! API with the arguments they were given.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::sync::Once;

/// tree-sitter's own allocator aborts when memory runs out; so do these (tree-sitter does not
/// check for null).
fn out_of_memory(size: usize) -> ! {
    eprintln!("error: tree-sitter failed to allocate {size} bytes");
    std::process::abort()
}

unsafe extern "C" fn ts_malloc(size: usize) -> *mut c_void {
    // SAFETY: mi_malloc accepts any size and returns null or a 16-byte aligned block.
    let ptr = unsafe { libmimalloc_sys::mi_malloc(size) };
    if ptr.is_null() && size != 0 {
        out_of_memory(size);
    }
    ptr
}

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut c_void {
    let Some(total) = count.checked_mul(size) else { out_of_memory(usize::MAX) };
    // SAFETY: as for mi_malloc; the block comes back zeroed.
    let ptr = unsafe { libmimalloc_sys::mi_zalloc(total) };
    if ptr.is_null() && total != 0 {
        out_of_memory(total);
    }
    ptr
}

unsafe extern "C" fn ts_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: `ptr` is null or came from these functions (tree-sitter frees and reallocates only
    // what it allocated, and everything it allocated came from here: see the caller's contract).
    let new = unsafe { libmimalloc_sys::mi_realloc(ptr, size) };
    if new.is_null() && size != 0 {
        out_of_memory(size);
    }
    new
}

unsafe extern "C" fn ts_free(ptr: *mut c_void) {
    // SAFETY: as for ts_realloc.
    unsafe { libmimalloc_sys::mi_free(ptr) }
}

/// Makes tree-sitter allocate through mimalloc; later calls do nothing.
///
/// # Safety
///
/// Call it before any tree-sitter parser, tree, cursor or query exists in the process (first
/// thing in `main`): tree-sitter must free each block with the allocator that made it.
pub unsafe fn use_mimalloc_for_tree_sitter() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let allocator = tree_sitter::Allocator {
            malloc: ts_malloc,
            calloc: ts_calloc,
            realloc: ts_realloc,
            free: ts_free,
        };
        // SAFETY: the four functions are one allocator family (mimalloc), never return null for
        // a non-zero size, and return blocks aligned as malloc's are (mimalloc aligns to 16
        // bytes). Our caller promises that no tree-sitter object exists yet, and `Once` makes
        // this run once, on one thread.
        unsafe { tree_sitter::set_allocator(Some(allocator)) }
    });
}
