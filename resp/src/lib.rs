//! RESP codec (placeholder; being written).
#![no_std]
extern crate alloc;
