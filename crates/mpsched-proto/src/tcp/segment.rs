//! The segment: plain data handed between endpoints by the event loop.
//!
//! Cheap to copy, no heap: SACK blocks live in a fixed array. Payload bytes are not carried
//! (the simulator only needs lengths and sequence numbers). MPTCP options are a few plain
//! fields plus flag bits; whether they are present on the wire is given by the flags, so the
//! same struct serves plain TCP (flags clear) and MPTCP.

/// Maximum number of SACK blocks a segment can carry (RFC 2018 §3: at most 4, 3 beside the
/// timestamps option).
pub const MAX_SACK_BLOCKS: usize = 4;

/// IPv4 header bytes (RFC 791, no options).
pub const IP_HEADER_BYTES: u64 = 20;
/// TCP header bytes without options (RFC 9293 §3.1).
pub const TCP_HEADER_BYTES: u64 = 20;
/// Timestamps option padded to 12 bytes (RFC 7323 §3: 10 bytes, plus 2 NOPs as Linux sends).
pub const TS_OPTION_BYTES: u64 = 12;
/// Header overhead of every segment on the wire: IP 20 + TCP 20 + timestamps 12 = 52 bytes.
pub const HEADER_BYTES: u64 = IP_HEADER_BYTES + TCP_HEADER_BYTES + TS_OPTION_BYTES;

/// Flag bits of a [`Segment`].
pub mod flags {
    /// SYN (RFC 9293).
    pub const SYN: u16 = 1 << 0;
    /// ACK field valid (RFC 9293).
    pub const ACK: u16 = 1 << 1;
    /// FIN (RFC 9293).
    pub const FIN: u16 = 1 << 2;
    /// MP_CAPABLE option present (RFC 8684 §3.1).
    pub const MP_CAPABLE: u16 = 1 << 3;
    /// MP_JOIN option present (RFC 8684 §3.2).
    pub const MP_JOIN: u16 = 1 << 4;
    /// MP_JOIN / MP_CAPABLE with the backup (B) bit set (RFC 8684 §3.2).
    pub const BACKUP: u16 = 1 << 5;
    /// DSS option carries a DATA_ACK (RFC 8684 §3.3).
    pub const DATA_ACK: u16 = 1 << 6;
    /// DSS option carries a mapping: `dsn` is the data sequence number of the first payload
    /// byte (RFC 8684 §3.3.1).
    pub const DSS_MAP: u16 = 1 << 7;
    /// DATA_FIN: the mapping ends the data stream (RFC 8684 §3.3.3).
    pub const DATA_FIN: u16 = 1 << 8;
}

/// One TCP segment (subflow level) with its options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    /// Bit set of [`flags`].
    pub flags: u16,
    /// Subflow sequence number of the first payload byte (or of the SYN). u64, no wrap.
    pub seq: u64,
    /// Payload length, bytes.
    pub len: u32,
    /// Cumulative acknowledgement (valid when `flags::ACK`).
    pub ack: u64,
    /// Advertised receive window, bytes. For MPTCP it is the connection window relative to
    /// `data_ack` (RFC 8684 §3.3.4); for TCP relative to `ack`.
    pub window: u64,
    /// Number of valid entries in `sack`.
    pub sack_len: u8,
    /// SACK blocks `[start, end)`, most recent first (RFC 2018 §4).
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// Timestamp value: sender's clock, ns (RFC 7323 TSval).
    pub ts_val: u64,
    /// Timestamp echo reply, ns (RFC 7323 TSecr; 0 = none).
    pub ts_ecr: u64,
    /// Data sequence number of the first payload byte (meaningful when `len > 0`; always
    /// filled, even in plain TCP where it is internal and not on the wire).
    pub dsn: u64,
    /// Connection-level cumulative DATA_ACK (always filled by data receivers).
    pub data_ack: u64,
}

impl Segment {
    /// True when `flag` (one of [`flags`]) is set.
    #[inline]
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// The valid SACK blocks.
    #[inline]
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.sack_len as usize]
    }

    /// Sequence space the segment occupies (payload, plus one for SYN and FIN).
    #[inline]
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + self.has(flags::SYN) as u64 + self.has(flags::FIN) as u64
    }

    /// Size of the segment on the wire (IP + TCP headers, options, payload), bytes.
    ///
    /// Option sizes: SACK 2 + 8 per block padded to 4 (RFC 2018 §3); MP_CAPABLE 12 on SYN /
    /// SYN-ACK (RFC 8684 §3.1, v0 form with key); MP_JOIN 12 on SYN, 16 on SYN-ACK, 24 on the
    /// third ACK (RFC 8684 §3.2); DSS 4 + 4 (DATA_ACK, 32-bit) + 10 (32-bit DSN, subflow seq,
    /// length) padded, i.e. 8 for an ACK only and 20 with a mapping (RFC 8684 §3.3).
    pub fn wire_bytes(&self) -> u64 {
        let mut opt = 0u64;
        if self.sack_len > 0 {
            opt += 4 + 8 * self.sack_len as u64;
        }
        if self.has(flags::MP_CAPABLE) {
            opt += 12;
        }
        if self.has(flags::MP_JOIN) {
            opt += match (self.has(flags::SYN), self.has(flags::ACK)) {
                (true, false) => 12,
                (true, true) => 16,
                _ => 24,
            };
        }
        if self.has(flags::DATA_ACK) || self.has(flags::DSS_MAP) {
            opt += 4;
            if self.has(flags::DATA_ACK) {
                opt += 4;
            }
            if self.has(flags::DSS_MAP) {
                opt += 12;
            }
        }
        HEADER_BYTES + opt + self.len as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_is_1500_bytes_on_the_wire() {
        let s = Segment {
            flags: flags::ACK,
            len: 1448,
            ..Default::default()
        };
        assert_eq!(s.wire_bytes(), 1500);
    }

    #[test]
    fn options_add_bytes() {
        let mut s = Segment {
            flags: flags::ACK,
            ..Default::default()
        };
        assert_eq!(s.wire_bytes(), 52);
        s.sack_len = 2;
        assert_eq!(s.wire_bytes(), 52 + 20);
        s.flags |= flags::DATA_ACK;
        assert_eq!(s.wire_bytes(), 52 + 20 + 8);
        assert_eq!(
            Segment {
                flags: flags::SYN,
                ..Default::default()
            }
            .seq_len(),
            1
        );
    }
}
