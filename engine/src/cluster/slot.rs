//! The hash slot of a key, exactly as Redis computes it: CRC16-XMODEM
//! (polynomial 0x1021, initial value 0, as `crc16` in Redis `src/crc16.c`)
//! of the key, or of its hash tag, modulo 16384 (`keyHashSlot` in Redis
//! `src/cluster.c`).
//!
//! The hash tag rule: if the key holds a `{` followed later by a `}` with at
//! least one byte between them, only the bytes between the first `{` and the
//! first `}` after it are hashed, so `{user1000}.following` and
//! `{user1000}.followers` share a slot. `{}` (empty) and a `{` without `}`
//! leave the whole key hashed.

/// Number of hash slots in a Redis Cluster (`CLUSTER_SLOTS` in `src/cluster.h`).
pub const SLOTS: u16 = 16384;

/// CRC16-XMODEM of `bytes`, a byte at a time from a 256-entry table (as
/// Redis's `crc16tab` in `src/crc16.c`, computed here at compile time).
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize])
}

/// `CRC16_TABLE[i]`: the CRC of byte `i` alone, bit by bit (polynomial 0x1021).
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The part of `key` that is hashed: its hash tag if it has a non-empty
/// one, else the whole key (`keyHashSlot`).
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`, in `0..16384`.
pub fn slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // The XMODEM check value, also in Redis `src/crc16.c`'s comment.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn table_matches_redis() {
        // The first entries of `crc16tab` in Redis `src/crc16.c`, and its last.
        assert_eq!(&CRC16_TABLE[..4], &[0x0000, 0x1021, 0x2042, 0x3063]);
        assert_eq!(CRC16_TABLE[255], 0x1ef0);
    }

    #[test]
    fn known_slots() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"hello"), 866);
        assert_eq!(slot(b""), 0);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    }

    #[test]
    fn hash_tag_rule() {
        assert_eq!(hash_tag(b"foo{bar}zap"), b"bar");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}", "an empty first tag hashes the whole key");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar", "from the first {{ to the first }} after it");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"foo{bar"), b"foo{bar");
        assert_eq!(hash_tag(b"}foo{"), b"}foo{");
    }
}
