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
/// TCP option space, bytes (RFC 9293 §3.1: data offset of at most 15 words; Linux
/// `MAX_TCP_OPTION_SPACE`).
pub const MAX_OPTION_BYTES: u64 = 40;
/// DSS option with a DATA_ACK only, as upstream Linux sends it: kind, length, subtype and flags
/// (`TCPOLEN_MPTCP_DSS_BASE` = 4) + a 64-bit DATA_ACK (`TCPOLEN_MPTCP_DSS_ACK64` = 8). Upstream
/// always maps with 64-bit DSNs, and a peer that received a 64-bit DSN acknowledges with a
/// 64-bit DATA_ACK (RFC 8684 §3.3.2; `msk->use_64bit_ack`).
pub const DSS_ACK_BYTES: u64 = 4 + 8;
/// DSS option with a mapping and a DATA_ACK: base 4 + `TCPOLEN_MPTCP_DSS_MAP64` 14 (64-bit DSN,
/// 32-bit subflow sequence number, 16-bit length, no checksum) + 64-bit DATA_ACK 8 = 26,
/// aligned to 28 (`mptcp_established_options_dss`: `ALIGN(dss_size, 4)`).
pub const DSS_MAP_ACK_BYTES: u64 = (4u64 + 14 + 8).div_ceil(4) * 4;
/// DSS option with a mapping only: 4 + 14 = 18, aligned to 20.
pub const DSS_MAP_BYTES: u64 = (4u64 + 14).div_ceil(4) * 4;

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
    /// third ACK (RFC 8684 §3.2); DSS as upstream Linux sends it (64-bit DSN and DATA_ACK):
    /// [`DSS_ACK_BYTES`] for an ACK only, [`DSS_MAP_ACK_BYTES`] with a mapping (RFC 8684 §3.3).
    #[inline]
    pub fn wire_bytes(&self) -> u64 {
        // Runs for every packet sent: the DSS size is a table lookup on its two flag bits,
        // and the handshake options (SYNs and third ACKs only) are tested once.
        const _: () = assert!(flags::DATA_ACK == 1 << 6 && flags::DSS_MAP == 1 << 7);
        const DSS_BYTES: [u64; 4] = [0, DSS_ACK_BYTES, DSS_MAP_BYTES, DSS_MAP_ACK_BYTES];
        let mut opt = DSS_BYTES[((self.flags >> 6) & 3) as usize];
        if self.sack_len > 0 {
            opt += 4 + 8 * self.sack_len as u64;
        }
        if self.flags & (flags::MP_CAPABLE | flags::MP_JOIN) != 0 {
            opt += self.handshake_option_bytes();
        }
        HEADER_BYTES + opt + self.len as u64
    }

    /// MP_CAPABLE and MP_JOIN option bytes (see [`Segment::wire_bytes`]).
    #[cold]
    fn handshake_option_bytes(&self) -> u64 {
        let mut opt = 0;
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
        opt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option sizes spelled out one by one, as RFC 2018 / RFC 8684 list them.
    fn wire_bytes_by_the_rules(s: &Segment) -> u64 {
        let mut opt = 0u64;
        if s.sack_len > 0 {
            opt += 4 + 8 * s.sack_len as u64;
        }
        if s.has(flags::MP_CAPABLE) {
            opt += 12;
        }
        if s.has(flags::MP_JOIN) {
            opt += match (s.has(flags::SYN), s.has(flags::ACK)) {
                (true, false) => 12,
                (true, true) => 16,
                _ => 24,
            };
        }
        opt += match (s.has(flags::DSS_MAP), s.has(flags::DATA_ACK)) {
            (true, true) => DSS_MAP_ACK_BYTES,
            (true, false) => DSS_MAP_BYTES,
            (false, true) => DSS_ACK_BYTES,
            (false, false) => 0,
        };
        HEADER_BYTES + opt + s.len as u64
    }

    proptest::proptest! {
        /// The table-driven size equals the rule-by-rule one for every flag combination.
        #[test]
        fn wire_bytes_follow_the_option_rules(f in 0u16..(1 << 9), sack_len in 0u8..=4, len in 0u32..70_000) {
            let s = Segment { flags: f, sack_len, len, ..Default::default() };
            proptest::prop_assert_eq!(s.wire_bytes(), wire_bytes_by_the_rules(&s));
        }
    }

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
        assert_eq!(s.wire_bytes(), 52 + 20 + 12);
        assert_eq!(
            Segment {
                flags: flags::SYN,
                ..Default::default()
            }
            .seq_len(),
            1
        );
    }

    #[test]
    fn a_full_mptcp_data_segment_fits_the_1500_byte_mtu() {
        // Linux `tcp_current_mss`: the MSS of a subflow (1460 - 12 bytes of timestamps) shrinks
        // by the options of an established segment beyond the timestamps; for MPTCP that is
        // the DSS option `mptcp_established_options_dss` reserves with no skb: base 4 + 64-bit
        // mapping 14 + 64-bit DATA_ACK 8 = 26, aligned to 28. 1448 - 28 = 1420 bytes of payload.
        assert_eq!(DSS_MAP_ACK_BYTES, 28);
        assert_eq!(crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500, 1420);
        let s = Segment {
            flags: flags::ACK | flags::DSS_MAP | flags::DATA_ACK,
            len: 1420,
            ..Default::default()
        };
        assert_eq!(s.wire_bytes(), 1500);
        // What is left of the option space on a data receiver's ACK: 40 - 12 (timestamps) -
        // 12 (DSS with a 64-bit DATA_ACK) = 16 bytes, one SACK block (2 + 8, Linux padding
        // `TCPOLEN_SACK_BASE_ALIGNED` 4).
        let room = MAX_OPTION_BYTES - TS_OPTION_BYTES - DSS_ACK_BYTES;
        assert_eq!((room - 4) / 8, 1);
    }
}
