//! Segments on their way through the network, stored compactly.
//!
//! Every packet of a connection refers to one record here from the moment it is sent until
//! it is delivered or dropped, so at scale (many flows with full windows) this store is the
//! largest part of the simulator's memory and of its cache footprint. A [`Segment`] is 128
//! bytes, 64 of them for four SACK blocks that only ACKs in a loss episode carry. A record is
//! 40 bytes: `ts_val` in 48 bits (78 h of simulated ns); `ts_ecr` as its distance back from
//! `ts_val` in 32 bits (the echoed clock is one the sender received, so earlier than its own
//! send time, and within 4.29 s of it while the peers keep talking); of `seq` and `ack` only
//! the one that is not 1 (a data segment acknowledges 1, the peer's SYN, and a pure ACK
//! starts at sequence number 1: `tcp::sender` `build`, `tcp::receiver`'s ACK); the DSN,
//! DATA_ACK and the window in 32 bits; the length in 16; `sack_len` in 3 bits beside the
//! record's own. A segment whose values do not fit (a flow past 4 GiB, a window of 4 GiB or
//! more, an echo older than 4.29 s or none yet, neither `seq` nor `ack` 1 as in a handshake,
//! a send time past 2^48 ns, a SACK edge past 4 GiB, a `sack_len` past 7) is kept whole in a
//! side pool instead,
//! and SACK blocks, when there are any, go to another
//! with their edges in 32 bits: the first three blocks, as many as a receiver sends beside
//! timestamps (`TcpConfig::max_sack_blocks`, Linux's limit too), in a 28-byte entry; a segment
//! with a non-zero fourth block is kept whole in the wide pool. Records are
//! index-addressed and freed slots are reused last-in first-out, so the touched memory
//! follows the number of segments in flight, not the number ever sent.
//!
//! A record also links to the next segment of the same TSO skb: on a path that carries the
//! sender's skbs whole (`PathConfig::gso`) one network packet holds a chain of records;
//! elsewhere the link is always [`NO_SEGMENT`]. One field (`link`) holds either that link or,
//! for a record with a side-pool entry, the entry's slot; the entry then keeps the link.
//!
//! Reading a record back gives the very `Segment` that was stored, field for field (the SACK
//! array whole, not only its valid blocks), so nothing downstream can tell the difference.

use crate::endpoint::Segment;
use mpsched_proto::tcp::MAX_SACK_BLOCKS;

type SackBlocks = [(u64, u64); MAX_SACK_BLOCKS];
const NO_SACK: SackBlocks = [(0, 0); MAX_SACK_BLOCKS];
/// SACK blocks the SACK pool keeps: a receiver sends at most three beside timestamps
/// (`TcpConfig::max_sack_blocks`; Linux `tcp_established_options` fits three in the option
/// space the timestamp leaves), so a fourth is zero unless configured otherwise.
const SACKS_KEPT: usize = 3;
/// The first [`SACKS_KEPT`] blocks of a SACK array whose edges all fit 32 bits and whose other
/// blocks are zero, as the SACK pool keeps it (24 bytes, not 64: an ACK in a loss episode
/// carries one, so the pool holds ~16 entries a flow at the peak, 161 401 at 10 000 flows).
type NarrowSacks = [(u32, u32); SACKS_KEPT];

fn narrow(sack: &SackBlocks) -> NarrowSacks {
    std::array::from_fn(|i| (sack[i].0 as u32, sack[i].1 as u32))
}

fn widen(sack: &NarrowSacks) -> SackBlocks {
    std::array::from_fn(|i| sack.get(i).map_or((0, 0), |&(s, e)| (s as u64, e as u64)))
}

/// A side-pool entry: what does not fit the record, and the record's skb link (which the
/// record's `link` field cannot hold while it points here).
#[derive(Debug, Clone, Copy)]
struct Side<T> {
    value: T,
    next: u32,
}

/// Bit of [`Record::meta`]: travelling to the client (on a path's down route).
const TO_CLIENT: u8 = 1;
/// Bit of [`Record::meta`]: the SACK array is in the SACK pool at `Record::link`.
const HAS_SACK: u8 = 2;
/// Bit of [`Record::meta`]: the whole segment is in the wide pool at `Record::link`; the
/// record keeps only where it goes.
const WIDE: u8 = 4;
/// Bit of [`Record::meta`]: a segment of the flow's request half-connection (an RPC's
/// client-to-server stream), not of its data connection.
const REQUEST: u8 = 8;
/// Bit of [`Record::meta`]: `ack` is 1 and `Record::seq_or_ack` is `seq`; without it `seq` is 1
/// and `seq_or_ack` is `ack`.
const ACK_ONE: u8 = 16;
/// [`Record::meta`] keeps `sack_len` above its five bits (at most 7: `MAX_SACK_BLOCKS` is 4).
const SACK_LEN_SHIFT: u32 = 5;

/// End of a chain of records (no next segment in the skb).
pub(crate) const NO_SEGMENT: u32 = u32::MAX;

/// One segment in flight with where it is going: 40 bytes, no field wider than 4 (so no
/// padding; a 64-bit `ts_val` would round it up to 48).
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Bits 0-31 of `ts_val`.
    ts_lo: u32,
    /// `ts_val - ts_ecr`.
    ts_ecr_back: u32,
    /// `seq` with `ACK_ONE` (then `ack` is 1), else `ack` (then `seq` is 1).
    seq_or_ack: u32,
    dsn: u32,
    data_ack: u32,
    window: u32,
    /// Index of the flow in the config.
    flow: u32,
    /// With `HAS_SACK` or `WIDE`: the slot in that side pool (which holds the skb link).
    /// Otherwise the next segment of the same TSO skb ([`NO_SEGMENT`]: none).
    link: u32,
    len: u16,
    flags: u16,
    /// Bits 32-47 of `ts_val`.
    ts_hi: u16,
    subflow: u8,
    /// The bits above (`TO_CLIENT` ... `ACK_ONE`) and `sack_len << SACK_LEN_SHIFT`.
    meta: u8,
}

/// The segment a record without a wide-pool entry holds, with SACK array `sack`.
#[inline(always)]
fn unpack(r: &Record, sack: SackBlocks) -> Segment {
    let (ack_one, seq_or_ack) = (r.meta & ACK_ONE != 0, r.seq_or_ack as u64);
    let ts_val = (r.ts_hi as u64) << 32 | r.ts_lo as u64;
    Segment {
        flags: r.flags,
        seq: if ack_one { seq_or_ack } else { 1 },
        len: r.len as u32,
        ack: if ack_one { 1 } else { seq_or_ack },
        window: r.window as u64,
        sack_len: r.meta >> SACK_LEN_SHIFT,
        sack,
        ts_val,
        ts_ecr: ts_val.wrapping_sub(r.ts_ecr_back as u64),
        dsn: r.dsn as u64,
        data_ack: r.data_ack as u64,
    }
}

/// Where a delivered segment goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Destination {
    /// Index of the flow in the config.
    pub flow: u32,
    /// Subflow index in the connection.
    pub subflow: u8,
    /// True when travelling to the client.
    pub to_client: bool,
    /// True for the request half-connection's endpoints (see `run/request.rs`).
    pub request: bool,
}

/// A slot's `u32` that, while the slot is free, holds the slot freed before it: the free list
/// threads through the freed slots themselves, so it costs no memory of its own (a `Vec<u32>` of
/// freed indices grew to the most slots free at once, ~4 bytes a record at the sawtooth's
/// trough) and a free or a reuse touches only the slot's own line.
trait FreeLink {
    fn free_link(&mut self) -> &mut u32;
}

impl FreeLink for Record {
    #[inline(always)]
    fn free_link(&mut self) -> &mut u32 {
        &mut self.link
    }
}

impl<T> FreeLink for Side<T> {
    #[inline(always)]
    fn free_link(&mut self) -> &mut u32 {
        &mut self.next
    }
}

impl FreeLink for (u32, u32) {
    #[inline(always)]
    fn free_link(&mut self) -> &mut u32 {
        &mut self.0
    }
}

/// Index-addressed slots with a free list; freed slots are reused first, the last freed first.
#[derive(Debug)]
struct Pool<T> {
    slots: Vec<T>,
    /// The last slot freed ([`NO_SEGMENT`]: none); its [`FreeLink`] holds the one before.
    free_head: u32,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), free_head: NO_SEGMENT }
    }
}

impl<T: Copy + FreeLink> Pool<T> {
    /// Stores `v` in the last freed slot, or in a new one below `limit` (panics with `full`).
    #[inline(always)]
    fn insert_below(&mut self, v: T, limit: usize, full: &'static str) -> u32 {
        let i = self.free_head;
        // `NO_SEGMENT` (none free) is past every slot (they stay below 2^31), so the one
        // bounds test is also the test for a free slot.
        if let Some(slot) = self.slots.get_mut(i as usize) {
            self.free_head = *slot.free_link();
            *slot = v;
            return i;
        }
        self.push_below(v, limit, full)
    }

    /// A new slot for `v` (the pool grows: rare once it has reached its peak).
    #[cold]
    #[inline(never)]
    fn push_below(&mut self, v: T, limit: usize, full: &str) -> u32 {
        assert!(self.slots.len() < limit, "{full}");
        self.slots.push(v);
        (self.slots.len() - 1) as u32
    }

    #[inline]
    fn insert(&mut self, v: T) -> u32 {
        // A side pool has at most one entry a record, so it never reaches this limit first.
        self.insert_below(v, NO_SEGMENT as usize, "side pool full")
    }

    /// Frees slot `i`; what it held is lost (its free link is overwritten).
    #[inline]
    fn remove(&mut self, i: u32) {
        debug_assert!((i as usize) < self.slots.len() && !self.free_slots().contains(&i));
        let head = self.free_head;
        *self.slots[i as usize].free_link() = head;
        self.free_head = i;
    }

    /// The free slots, the last freed first (a walk of the list: for checks, not the hot path).
    fn free_slots(&self) -> Vec<u32> {
        let (mut out, mut i) = (Vec::new(), self.free_head);
        while i != NO_SEGMENT && out.len() <= self.slots.len() {
            out.push(i);
            let mut slot = self.slots[i as usize];
            i = *slot.free_link();
        }
        out
    }
}

/// The segments in flight.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    records: Pool<Record>,
    sacks: Pool<Side<NarrowSacks>>,
    wide: Pool<Side<Segment>>,
    /// Application messages in flight (flow, tag): a packet carries only a slot here.
    app_msgs: Pool<(u32, u32)>,
}

impl InFlight {
    /// Stores a segment sent on `subflow` of `flow`; returns its handle.
    #[inline(always)]
    pub(crate) fn insert(&mut self, dest: Destination, seg: &Segment) -> u32 {
        // Branch-free tests (this runs for every packet sent), one branch for both: any bit
        // above 32 in the five narrowed fields, above 48 in the send time or above 16 in the
        // length (an echo later than the send time wraps to a value past 32 bits), or the one
        // of `seq` and `ack` not kept other than 1; any non-zero byte in the SACK array (valid
        // blocks or not) or in `sack_len` (the side entry refuses a `sack_len` past 3 bits).
        let ts_ecr_back = seg.ts_val.wrapping_sub(seg.ts_ecr);
        let ack_one = seg.ack == 1;
        let (seq_or_ack, other) = if ack_one { (seg.seq, seg.ack) } else { (seg.ack, seg.seq) };
        let high = (seq_or_ack | seg.dsn | seg.data_ack | seg.window | ts_ecr_back) >> 32
            | seg.ts_val >> 48
            | (seg.len >> 16) as u64
            | (other ^ 1);
        let sack = seg.sack.iter().fold(seg.sack_len as u64, |acc, &(s, e)| acc | s | e);
        // SACK edges past 32 bits are one more value that does not fit.
        let high = high | sack >> 32;
        let meta = if dest.to_client { TO_CLIENT } else { 0 }
            | if dest.request { REQUEST } else { 0 }
            | if ack_one { ACK_ONE } else { 0 };
        let mut meta = meta | seg.sack_len << SACK_LEN_SHIFT;
        let mut link = NO_SEGMENT;
        if high | sack != 0 {
            (meta, link) = self.insert_side(meta, high != 0, seg);
        }
        let record = Record {
            ts_lo: seg.ts_val as u32,
            ts_hi: (seg.ts_val >> 32) as u16,
            ts_ecr_back: ts_ecr_back as u32,
            seq_or_ack: seq_or_ack as u32,
            dsn: seg.dsn as u32,
            data_ack: seg.data_ack as u32,
            window: seg.window as u32,
            len: seg.len as u16,
            flow: dest.flow,
            link,
            flags: seg.flags,
            subflow: dest.subflow,
            meta,
        };
        // Indices stay below 2^31: a packet's payload marks messages with the top bit.
        self.records.insert_below(record, 1 << 31, "2^31 segments in flight")
    }

    /// Stores an application message of `flow` with `tag`; returns its slot (below 2^31 - 1).
    pub(crate) fn insert_app_msg(&mut self, flow: u32, tag: u32) -> u32 {
        self.app_msgs.insert_below((flow, tag), (1 << 31) - 1, "2^31 messages in flight")
    }

    /// The (flow, tag) of the message in `slot`, which is freed.
    pub(crate) fn take_app_msg(&mut self, slot: u32) -> (u32, u32) {
        // Read before the slot is freed: freeing overwrites `flow` with the free link.
        let msg = self.app_msgs.slots[slot as usize];
        self.app_msgs.remove(slot);
        msg
    }

    /// The side pool entry of a segment that has one: the whole segment when a value does not
    /// fit the record (`wide`), a SACK block past the kept ones is set or `sack_len` is past
    /// 7, else its SACK array. Returns the record's `meta` and `link`.
    #[cold]
    #[inline(never)]
    fn insert_side(&mut self, meta: u8, wide: bool, seg: &Segment) -> (u8, u32) {
        // Blocks past the kept ones and a `sack_len` past `meta`'s 3 bits are tested here,
        // off the per-packet path.
        let sack_len_fits = seg.sack_len >> (8 - SACK_LEN_SHIFT) == 0;
        if wide || !sack_len_fits || seg.sack[SACKS_KEPT..].iter().any(|&b| b != (0, 0)) {
            (meta | WIDE, self.wide.insert(Side { value: *seg, next: NO_SEGMENT }))
        } else {
            (meta | HAS_SACK, self.sacks.insert(Side { value: narrow(&seg.sack), next: NO_SEGMENT }))
        }
    }

    /// The skb link of record `idx`, wherever it is kept.
    #[inline]
    fn next_mut(&mut self, idx: u32) -> &mut u32 {
        let r = &mut self.records.slots[idx as usize];
        if r.meta & HAS_SACK != 0 {
            &mut self.sacks.slots[r.link as usize].next
        } else if r.meta & WIDE != 0 {
            &mut self.wide.slots[r.link as usize].next
        } else {
            &mut r.link
        }
    }

    /// Where segment `idx` goes.
    #[inline]
    pub(crate) fn destination(&self, idx: u32) -> Destination {
        let r = &self.records.slots[idx as usize];
        Destination {
            flow: r.flow,
            subflow: r.subflow,
            to_client: r.meta & TO_CLIENT != 0,
            request: r.meta & REQUEST != 0,
        }
    }

    /// Starts loading segment `idx`'s record into the cache (a hint: see
    /// `mpsched_engine::prefetch`); an index past the end is ignored.
    #[inline]
    pub(crate) fn prefetch(&self, idx: u32) {
        if let Some(r) = self.records.slots.get(idx as usize) {
            mpsched_engine::prefetch::line(r);
        }
    }

    /// The segment `idx`, as it was stored (for a look that leaves it stored; a delivery reads
    /// and frees it at once with [`InFlight::take`]).
    #[inline]
    pub(crate) fn segment(&self, idx: u32) -> Segment {
        let r = &self.records.slots[idx as usize];
        match r.meta & (HAS_SACK | WIDE) {
            0 => unpack(r, NO_SACK),
            HAS_SACK => unpack(r, widen(&self.sacks.slots[r.link as usize].value)),
            _ => self.wide.slots[r.link as usize].value,
        }
    }

    /// The segment `*at`, as it was stored; `*at` is freed and becomes the next segment of its
    /// skb ([`NO_SEGMENT`]: none), which stays stored. Inlined always: every delivered segment
    /// is read here, and a call would return the 128-byte `Segment` through memory (so would a
    /// tuple with the link: it was copied once more, 24 instructions a packet). The record is
    /// read and freed through one reference, and a side-pool entry (an ACK with SACK blocks, a
    /// segment kept whole) is read and freed out of line, so the common record's read back has
    /// no select for the SACK array.
    #[inline(always)]
    pub(crate) fn take(&mut self, at: &mut u32) -> Segment {
        let (idx, head) = (*at, self.records.free_head);
        let slot = &mut self.records.slots[idx as usize];
        let r = *slot;
        slot.link = head;
        self.records.free_head = idx;
        if r.meta & (HAS_SACK | WIDE) != 0 {
            return self.take_side(&r, at);
        }
        *at = r.link;
        unpack(&r, NO_SACK)
    }

    /// [`InFlight::take`] of a record `r` (already freed) with a side-pool entry, which is freed.
    #[cold]
    #[inline(never)]
    fn take_side(&mut self, r: &Record, at: &mut u32) -> Segment {
        if r.meta & WIDE != 0 {
            let Side { value, next } = self.wide.slots[r.link as usize];
            self.wide.remove(r.link);
            *at = next;
            return value;
        }
        let Side { value, next } = self.sacks.slots[r.link as usize];
        self.sacks.remove(r.link);
        *at = next;
        unpack(r, widen(&value))
    }

    /// Links segment `next` after `idx` in one skb.
    #[inline]
    pub(crate) fn set_next(&mut self, idx: u32, next: u32) {
        *self.next_mut(idx) = next;
    }

    /// Unlinks segment `idx` from the rest of its skb; returns what followed it.
    #[inline]
    pub(crate) fn take_next(&mut self, idx: u32) -> u32 {
        std::mem::replace(self.next_mut(idx), NO_SEGMENT)
    }

    /// Frees segment `idx` (delivered or dropped); returns the next segment of its skb
    /// ([`NO_SEGMENT`]: none), which stays stored.
    #[inline]
    pub(crate) fn remove(&mut self, idx: u32) -> u32 {
        // Only the two fields that free it are read (not the whole record), and the slot is
        // freed through the same reference (one bounds test).
        debug_assert!(!self.records.free_slots().contains(&idx), "segment {idx} freed twice");
        let head = self.records.free_head;
        let r = &mut self.records.slots[idx as usize];
        let (meta, link) = (r.meta, r.link);
        r.link = head;
        self.records.free_head = idx;
        if meta & (HAS_SACK | WIDE) != 0 {
            self.remove_side(meta, link)
        } else {
            link
        }
    }

    /// Frees the side-pool entry of a record that has one; returns the record's skb link.
    #[cold]
    #[inline(never)]
    fn remove_side(&mut self, meta: u8, side: u32) -> u32 {
        // The link is read before the entry is freed (freeing overwrites it).
        if meta & HAS_SACK != 0 {
            let next = self.sacks.slots[side as usize].next;
            self.sacks.remove(side);
            next
        } else {
            let next = self.wide.slots[side as usize].next;
            self.wide.remove(side);
            next
        }
    }

    /// Frees segment `idx` and the rest of its skb.
    #[inline]
    pub(crate) fn remove_chain(&mut self, mut idx: u32) {
        while idx != NO_SEGMENT {
            idx = self.remove(idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_proto::tcp::flags;

    #[test]
    fn a_record_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Record>(), 40);
    }

    #[test]
    fn seq_or_ack_of_1_send_times_past_48_bits_and_sack_lens_past_7() {
        let mut f = InFlight::default();
        let d = Destination { flow: 6, subflow: 3, to_client: false, request: true };
        let data = Segment { flags: flags::ACK, seq: 7, len: 1448, ack: 1, ts_val: 5, ts_ecr: 4, ..Default::default() };
        let ack =
            Segment { flags: flags::ACK, seq: 1, ack: 9, window: 100, ts_val: 5, ts_ecr: 4, ..Default::default() };
        let (t48, t47) = (1u64 << 48, (1u64 << 48) - 1);
        let cases = [
            // A data segment (ack 1), a pure ACK (seq 1), both 1: the record.
            (data, false),
            (ack, false),
            (Segment { seq: 1, ..data }, false),
            // Neither is 1 (the SYN at (0, 0); a segment acknowledging data and carrying some): whole.
            (Segment { ack: 2, ..data }, true),
            (Segment { seq: 0, ack: 0, ..data }, true),
            (Segment { seq: 2, ..ack }, true),
            // Send times: the last that fits 48 bits, and the first that does not.
            (Segment { ts_val: t47, ts_ecr: t47 - 3, ..data }, false),
            (Segment { ts_val: t48, ts_ecr: t48 - 3, ..data }, true),
            (Segment { ts_val: u64::MAX, ts_ecr: u64::MAX, ..ack }, true),
            // `sack_len` with zero blocks (a value as stored, not as valid): 7 fits (in the SACK
            // pool), 8 does not.
            (Segment { sack_len: 7, ..ack }, false),
            (Segment { sack_len: 8, ..ack }, true),
            (Segment { sack_len: u8::MAX, ..data }, true),
        ];
        for (seg, wide) in cases {
            let i = f.insert(d, &seg);
            assert_eq!(f.segment(i), seg);
            let dest = f.destination(i);
            assert_eq!((dest.flow, dest.subflow, dest.to_client, dest.request), (6, 3, false, true));
            assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), wide as usize, "{seg:?}");
            assert_eq!(f.remove(i), NO_SEGMENT);
        }
    }

    #[test]
    fn echoes_and_lengths_that_do_not_fit_are_kept_whole() {
        let mut f = InFlight::default();
        let d = Destination { flow: 3, subflow: 1, to_client: true, request: false };
        let now = 10_000_000_000u64;
        let cases = [
            // An echo just under 4.29 s back fits the record; these do not.
            (now, now - u32::MAX as u64, 1448, false),
            (now, now - u32::MAX as u64 - 1, 1448, true),
            // No echo yet (0) at a send time past 4.29 s.
            (now, 0, 1448, true),
            // An echo later than the send time.
            (now, now + 1, 1448, true),
            (now, now, 1 << 16, true),
            (now, now, u16::MAX as u32, false),
        ];
        for (ts_val, ts_ecr, len, wide) in cases {
            let s = Segment { flags: flags::ACK, seq: 5, ack: 1, len, ts_val, ts_ecr, ..Default::default() };
            let i = f.insert(d, &s);
            assert_eq!(f.segment(i), s);
            assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), wide as usize, "{ts_val} {ts_ecr} {len}");
            f.remove(i);
        }
    }

    #[test]
    fn records_with_side_entries_keep_their_skb_link() {
        let mut f = InFlight::default();
        let d = Destination { flow: 0, subflow: 0, to_client: true, request: false };
        let plain = Segment { seq: 0, ack: 1, len: 1448, ts_val: 9, ts_ecr: 4, ..Default::default() };
        let mut sacked = Segment { seq: 1448, ack: 1, len: 1448, ..Default::default() };
        sacked.sack_len = 1;
        sacked.sack[0] = (1, 2);
        let wide = Segment { seq: 1 << 40, ack: 1, len: 1448, ..Default::default() };
        let ids = [f.insert(d, &plain), f.insert(d, &sacked), f.insert(d, &wide), f.insert(d, &plain)];
        for w in ids.windows(2) {
            f.set_next(w[0], w[1]);
        }
        assert_eq!((f.segment(ids[1]), f.segment(ids[2])), (sacked, wide));
        assert_eq!(f.take_next(ids[2]), ids[3]);
        f.set_next(ids[2], ids[3]);
        assert_eq!(f.remove(ids[0]), ids[1]);
        assert_eq!(f.remove(ids[1]), ids[2]);
        assert_eq!(f.remove(ids[2]), ids[3]);
        assert_eq!(f.remove(ids[3]), NO_SEGMENT);
        assert_eq!((f.sacks.free_slots().len(), f.wide.free_slots().len(), f.records.free_slots().len()), (1, 1, 4));
        // Reused side slots start unlinked.
        let again = f.insert(d, &sacked);
        assert_eq!(f.take_next(again), NO_SEGMENT);
    }

    #[test]
    fn segments_come_back_as_stored_and_slots_are_reused() {
        let mut f = InFlight::default();
        let data = Segment {
            flags: flags::ACK,
            seq: 1 << 20,
            ack: 1,
            len: 1448,
            dsn: 7,
            ts_val: 3 << 40,
            ..Default::default()
        };
        let mut ack =
            Segment { flags: flags::ACK | flags::DATA_ACK, seq: 1, ack: 99, window: 1 << 30, ..Default::default() };
        ack.sack_len = 2;
        ack.sack[0] = (200, 300);
        ack.sack[1] = (400, 500);
        // Bytes past the valid blocks are kept too (a fourth block: see
        // `a_fourth_sack_block_keeps_the_segment_whole`).
        ack.sack[2] = (1, 2);
        let d = Destination { flow: 5, subflow: 2, to_client: true, request: false };
        let a = f.insert(d, &data);
        let b = f.insert(Destination { to_client: false, ..d }, &ack);
        assert_eq!(f.segment(a), data);
        assert_eq!(f.segment(b), ack);
        assert!(f.destination(a).to_client && !f.destination(b).to_client);
        assert_eq!((f.destination(b).flow, f.destination(b).subflow), (5, 2));
        f.remove(b);
        f.remove(a);
        // Last freed, first reused; the SACK slot is freed with its record.
        assert_eq!(f.insert(d, &data), a);
        assert_eq!(f.insert(d, &ack), b);
        assert_eq!(f.segment(b), ack);
        assert_eq!(f.sacks.slots.len(), 1);
    }

    #[test]
    fn sack_entries_are_28_bytes_and_edges_past_32_bits_go_whole() {
        assert_eq!(std::mem::size_of::<Side<NarrowSacks>>(), 28);
        let mut f = InFlight::default();
        let d = Destination { flow: 2, subflow: 0, to_client: false, request: false };
        let mut ack = Segment { flags: flags::ACK, seq: 1, ack: 5, ..Default::default() };
        ack.sack_len = 2;
        ack.sack[0] = (u32::MAX as u64 - 9, u32::MAX as u64);
        ack.sack[1] = (10, 20);
        let narrow = f.insert(d, &ack);
        assert_eq!(f.segment(narrow), ack);
        assert_eq!((f.sacks.slots.len(), f.wide.slots.len()), (1, 0));
        // One edge one past 32 bits (in a block past sack_len too): the whole segment is kept.
        ack.sack[3] = (0, u32::MAX as u64 + 1);
        let wide = f.insert(d, &ack);
        assert_eq!(f.segment(wide), ack);
        assert_eq!((f.sacks.slots.len(), f.wide.slots.len()), (1, 1));
    }

    #[test]
    fn values_past_32_bits_are_kept_whole() {
        let mut f = InFlight::default();
        let d = Destination { flow: 1, subflow: 0, to_client: false, request: true };
        let mut seg = Segment { flags: flags::ACK, len: 1000, ..Default::default() };
        seg.sack_len = 1;
        seg.sack[0] = (1 << 33, (1 << 33) + 1000);
        for field in 0..5 {
            let mut s = seg;
            let big = u32::MAX as u64 + 1 + field;
            match field {
                0 => s.seq = big,
                1 => s.ack = big,
                2 => s.dsn = big,
                3 => s.data_ack = big,
                _ => s.window = big,
            }
            let i = f.insert(d, &s);
            assert_eq!(f.segment(i), s);
            assert_eq!((f.destination(i).flow, f.destination(i).request), (1, true));
            f.remove(i);
        }
        assert_eq!(f.wide.slots.len(), 1);
        assert_eq!(f.wide.free_slots().len(), 1);
    }

    #[test]
    fn a_fourth_sack_block_keeps_the_segment_whole() {
        let mut f = InFlight::default();
        let d = Destination { flow: 4, subflow: 1, to_client: false, request: false };
        let mut ack = Segment { flags: flags::ACK, seq: 1, ack: 100, ..Default::default() };
        ack.sack_len = 3;
        ack.sack[0] = (300, 400);
        ack.sack[1] = (500, 600);
        ack.sack[2] = (700, 800);
        let three = f.insert(d, &ack);
        assert_eq!(f.segment(three), ack);
        assert_eq!((f.sacks.slots.len(), f.wide.slots.len()), (1, 0));
        // A fourth block, valid or only a stale value past `sack_len`: kept whole, read back equal.
        for (len, block) in [(4, (900, 1000)), (3, (0, 1)), (3, (1, 0))] {
            let mut four = ack;
            four.sack_len = len;
            four.sack[3] = block;
            let i = f.insert(d, &four);
            assert_eq!(f.segment(i), four);
            assert_eq!(f.destination(i).flow, 4);
            assert_eq!((f.sacks.slots.len(), f.wide.slots.len() - f.wide.free_slots().len()), (1, 1), "{block:?}");
            f.remove(i);
        }
        assert_eq!(f.segment(three), ack);
    }

    #[test]
    fn a_packet_carries_one_word_and_messages_are_kept_by_slot() {
        use super::super::{Carried, Payload};
        use mpsched_engine::net::Packet;
        assert_eq!((std::mem::size_of::<Payload>(), std::mem::size_of::<Packet<Payload>>()), (4, 16));
        assert!(matches!(Payload::segment(0).carried(), Carried::Segment(0)));
        assert!(matches!(Payload::segment((1 << 31) - 1).carried(), Carried::Segment(i) if i == (1 << 31) - 1));
        assert!(matches!(Payload::cross().carried(), Carried::Cross));
        assert!(matches!(Payload::app_msg((1 << 31) - 2).carried(), Carried::AppMsg(s) if s == (1 << 31) - 2));
        let mut f = InFlight::default();
        let a = f.insert_app_msg(7, u32::MAX);
        let b = f.insert_app_msg(u32::MAX - 1, 3);
        let Carried::AppMsg(slot) = Payload::app_msg(b).carried() else { panic!("a message") };
        assert_eq!(f.take_app_msg(slot), (u32::MAX - 1, 3));
        // A freed slot is reused; the other message is kept.
        assert_eq!(f.insert_app_msg(1, 2), b);
        assert_eq!((f.take_app_msg(a), f.take_app_msg(b)), ((7, u32::MAX), (1, 2)));
    }

    #[test]
    fn freed_slots_are_reused_last_freed_first_through_their_own_links() {
        let mut f = InFlight::default();
        let d = Destination { flow: 1, subflow: 0, to_client: true, request: false };
        let seg = |i: u64| Segment { seq: 1448 * i, ack: 1, len: 1448, ..Default::default() };
        let mut sacked = seg(9);
        sacked.sack_len = 1;
        sacked.sack[0] = (5, 6);
        let ids: Vec<u32> = (0..5).map(|i| f.insert(d, &seg(i))).collect();
        let sides: Vec<u32> = (0..3).map(|_| f.insert(d, &sacked)).collect();
        assert_eq!((ids.clone(), sides.clone()), (vec![0, 1, 2, 3, 4], vec![5, 6, 7]));
        for &i in [1, 3, 0].iter().chain(&sides) {
            f.remove(i);
        }
        assert_eq!(f.records.free_slots(), vec![7, 6, 5, 0, 3, 1]);
        assert_eq!(f.sacks.free_slots(), vec![2, 1, 0]);
        // Reused in reverse order of freeing, each coming back as stored; then new slots.
        for (want, s) in
            [(7, seg(10)), (6, sacked), (5, seg(11)), (0, sacked), (3, seg(12)), (1, seg(13)), (8, seg(14))]
        {
            let i = f.insert(d, &s);
            assert_eq!((i, f.segment(i)), (want, s));
            assert_eq!(f.take_next(i), NO_SEGMENT);
        }
        assert_eq!((f.records.free_slots(), f.sacks.free_slots()), (vec![], vec![0]));
        assert_eq!((f.segment(2), f.segment(4)), (seg(2), seg(4)));
        // Messages too: the freed slot's flow is read before it is overwritten by the link.
        let m = [f.insert_app_msg(3, 4), f.insert_app_msg(5, 6)];
        assert_eq!(f.take_app_msg(m[0]), (3, 4));
        assert_eq!(f.insert_app_msg(7, 8), m[0]);
        assert_eq!((f.take_app_msg(m[1]), f.take_app_msg(m[0])), ((5, 6), (7, 8)));
    }

    #[test]
    fn take_reads_and_frees_records_and_side_entries_alike() {
        let mut f = InFlight::default();
        let d = Destination { flow: 2, subflow: 1, to_client: false, request: true };
        let plain = Segment {
            flags: flags::ACK,
            seq: 9,
            ack: 1,
            len: 1448,
            ts_val: 9,
            ts_ecr: 4,
            dsn: 3,
            ..Default::default()
        };
        let mut sacked = Segment { flags: flags::ACK, seq: 1, ack: 77, window: 5, ..Default::default() };
        sacked.sack_len = 2;
        sacked.sack[0] = (100, 200);
        sacked.sack[1] = (300, 400);
        let wide = Segment { seq: 1 << 40, ack: 1, len: 1448, ..Default::default() };
        for round in 0..2 {
            let ids = [f.insert(d, &plain), f.insert(d, &sacked), f.insert(d, &wide), f.insert(d, &plain)];
            for w in ids.windows(2) {
                f.set_next(w[0], w[1]);
            }
            let want = [plain, sacked, wide, plain];
            for (k, &i) in ids.iter().enumerate() {
                assert_eq!(f.segment(i), want[k]);
                let next = ids.get(k + 1).copied().unwrap_or(NO_SEGMENT);
                let mut at = i;
                assert_eq!((f.take(&mut at), at), (want[k], next), "round {round}, segment {k}");
            }
            // All freed, side entries too, and reused in the next round.
            assert_eq!(f.records.free_slots().len(), 4);
            assert_eq!((f.sacks.free_slots().len(), f.wide.free_slots().len()), (1, 1));
            assert_eq!((f.records.slots.len(), f.sacks.slots.len(), f.wide.slots.len()), (4, 1, 1));
        }
    }

    #[test]
    fn an_skb_chain_is_walked_and_freed_whole() {
        let mut f = InFlight::default();
        let d = Destination { flow: 0, subflow: 0, to_client: true, request: false };
        let segs: Vec<Segment> =
            (0..3).map(|i| Segment { seq: 1448 * i, ack: 1, len: 1448, ..Default::default() }).collect();
        let ids: Vec<u32> = segs.iter().map(|s| f.insert(d, s)).collect();
        assert_eq!(f.take_next(ids[0]), NO_SEGMENT);
        f.set_next(ids[0], ids[1]);
        f.set_next(ids[1], ids[2]);
        // Links do not change the segments read back.
        assert_eq!(f.segment(ids[1]), segs[1]);
        f.remove_chain(ids[0]);
        assert_eq!(f.records.free_slots().len(), 3);
        // A reused slot starts unlinked.
        let again = f.insert(d, &segs[0]);
        assert_eq!(f.remove(again), NO_SEGMENT);
    }
}
