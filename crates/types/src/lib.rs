//! pocketbench-types: the vocabulary the harness (`pocketbench`) and the
//! probe (`pocketbench-probe`) share, and nothing else: a configuration's
//! shape and quantization ([`arch`]), the run it is measured on
//! ([`workload`]), quantities with units ([`units`]), measured samples
//! ([`stats`]) and the fixed hash ids are made of ([`fnv1a`]). It depends
//! on serde and small maths crates only, so both sides can depend on it
//! and every arrow between them runs one way.
#![deny(missing_docs)]

pub mod arch;
pub mod meter;
pub mod stats;
pub mod units;
pub mod workload;

/// 64-bit FNV-1a (Fowler, Noll, Vo; IETF draft-eastlake-fnv). Used for ids and
/// digests because, unlike `std`'s hasher, its output is fixed forever.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
