//! Commands by lowercase name, looked up case-insensitively without
//! allocating: the map the table and each container's subcommands use.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Longest command or subcommand name looked up (Redis's longest is 30
/// bytes: `cluster|count-failure-reports`); longer names are not commands.
pub const MAX_NAME: usize = 64;

/// FNV-1a: command names are short, and SipHash (std's default) cost more
/// than the rest of a look-up. Not DoS-resistant, and need not be: the
/// keys are the server's command names, not the client's input.
#[derive(Default)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Entries by lowercase name.
pub type Names<T> = HashMap<Box<[u8]>, T, BuildHasherDefault<NameHasher>>;

/// Looks `name` up case-insensitively, lowercasing into a stack buffer:
/// no allocation (this runs for every command of every batch).
pub fn lookup<'n, T>(names: &'n Names<T>, name: &[u8]) -> Option<&'n T> {
    if name.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME];
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    names.get(&*lower)
}
