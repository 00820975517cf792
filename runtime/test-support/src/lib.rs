//! Fixtures that sift's tests share and the shipped binary never contains: only test targets
//! depend on this crate (dev-dependencies, and the end-to-end `tests/` crate).

pub mod openai;
