//! Segments on their way through the network, stored compactly.
//!
//! Every packet of a connection refers to one record here from the moment it is sent until
//! it is delivered or dropped, so at scale (many flows with full windows) this store is the
//! largest part of the simulator's memory and of its cache footprint. A [`Segment`] is 128
//! bytes, 64 of them for four SACK blocks that only ACKs in a loss episode carry. A record is
//! 36 bytes: `ts_val` in 48 bits (78 h of simulated ns); `ts_ecr` as its distance back from
//! `ts_val` in 32 bits (the echoed clock is one the sender received, so earlier than its own
//! send time, and within 4.29 s of it while the peers keep talking); of `seq` and `ack` only
//! the one that is not 1 (a data segment acknowledges 1, the peer's SYN, and a pure ACK
//! starts at sequence number 1: `tcp::sender` `build`, `tcp::receiver`'s ACK), and with the
//! same bit of the DSN and DATA_ACK only the one of that kind (a data segment's DATA_ACK is 0
//! in a one-way transfer, a pure ACK's DSN is 0); that one, the window in 32 bits; the length
//! in 16; `sack_len` in 3 bits beside the record's own. A segment whose values do not fit (a
//! flow past 4 GiB, a window of 4 GiB or more, an echo older than 4.29 s or none yet, neither
//! `seq` nor `ack` 1 as in a handshake, a DATA_ACK on data or a DSN on an ACK, a send time
//! past 2^48 ns, a `sack_len` past 7) is kept whole in a side pool
//! instead, and SACK blocks, when there are any, go to another with each edge in 3 bytes, as
//! its distance above the segment's `ack`: the first three blocks, as many as a receiver sends
//! beside timestamps (`TcpConfig::max_sack_blocks`, Linux's limit too), in a 22-byte entry; a
//! segment with a non-zero fourth block, or an edge below its `ack` or 16 MiB or more above
//! it, is kept whole in the wide pool. Records are
//! index-addressed and freed slots are reused last-in first-out, so the touched memory
//! follows the number of segments in flight, not the number ever sent; the list of free slots
//! is threaded through the free slots themselves (a record's `link`, a side entry's `next`).
//!
//! A record also links to the next segment of the same TSO skb: on a path that carries the
//! sender's skbs whole (`PathConfig::gso`) one network packet holds a chain of records;
//! elsewhere the link is always [`NO_SEGMENT`]. One field (`link`) holds either that link or,
//! for a record with a side-pool entry, the entry's slot; the entry then keeps the link.
//!
//! Reading a record back gives the very `Segment` that was stored, field for field (the SACK
//! array whole, not only its valid blocks), so nothing downstream can tell the difference. A
//! delivery's read back is lent, not built: it fills a segment kept for the record's kind, whose
//! fields the kind fixes are never rewritten ([`ReadBack`]).

use crate::endpoint::Segment;
use mpsched_proto::tcp::MAX_SACK_BLOCKS;

type SackBlocks = [(u64, u64); MAX_SACK_BLOCKS];
const NO_SACK: SackBlocks = [(0, 0); MAX_SACK_BLOCKS];
/// SACK blocks the SACK pool keeps: a receiver sends at most three beside timestamps
/// (`TcpConfig::max_sack_blocks`; Linux `tcp_established_options` fits three in the option
/// space the timestamp leaves), so a fourth is zero unless configured otherwise.
const SACKS_KEPT: usize = 3;
/// Bytes of a SACK edge's code in the SACK pool: 0 for an edge of 0 (an empty block), else
/// the edge's distance above the segment's `ack` plus 1, below 2^24. A receiver's blocks lie
/// above the point it acknowledges and within its window (`tcp::receiver` `sack_blocks`: the
/// out-of-order ranges above `rcv_nxt`), so 16 MiB covers any window short of that.
const EDGE_BYTES: usize = 3;
/// The first [`SACKS_KEPT`] blocks' edges as codes of [`EDGE_BYTES`], then the record's skb link
/// (22 bytes, not 64; 28 with 32-bit edges: an ACK in a loss episode carries one, so the pool
/// holds ~16 entries a flow at the peak, 161 401 at 10 000 flows, most with three blocks).
#[derive(Debug, Clone, Copy)]
struct SackEntry([u8; SACK_CODES_BYTES + 4]);
const SACK_CODES_BYTES: usize = 2 * SACKS_KEPT * EDGE_BYTES;

impl SackEntry {
    /// The entry of `sack` in a segment acknowledging `ack`, if its first [`SACKS_KEPT`] blocks'
    /// edges have codes and the other blocks are empty.
    fn narrow(sack: &SackBlocks, ack: u64) -> Option<Self> {
        let mut bytes = [0u8; SACK_CODES_BYTES + 4];
        let mut out_of_reach = sack[SACKS_KEPT..].iter().fold(0, |acc, &(s, e)| acc | s | e);
        let edges = sack[..SACKS_KEPT].iter().flat_map(|&(s, e)| [s, e]);
        for (k, edge) in edges.enumerate() {
            let code = if edge == 0 { 0 } else { edge.wrapping_sub(ack).wrapping_add(1) };
            // Past the bytes, or the empty edge's 0 for an edge that is not 0 (just below `ack`).
            out_of_reach |= code >> (8 * EDGE_BYTES) | u64::from(edge != 0 && code == 0);
            // Four bytes at a time, in order: each edge's fourth is the next one's first (the
            // last edge's, the link's first, which the caller sets).
            bytes[k * EDGE_BYTES..k * EDGE_BYTES + 4].copy_from_slice(&(code as u32).to_le_bytes());
        }
        (out_of_reach == 0).then_some(Self(bytes))
    }

    /// The SACK array stored, of a segment acknowledging `ack`.
    fn widen(&self, ack: u64) -> SackBlocks {
        let edge = |k: usize| {
            let at = k * EDGE_BYTES;
            let four = u32::from_le_bytes(self.0[at..at + 4].try_into().expect("4 bytes"));
            match four & ((1 << (8 * EDGE_BYTES)) - 1) {
                0 => 0,
                c => ack.wrapping_add(u64::from(c) - 1),
            }
        };
        std::array::from_fn(|i| if i < SACKS_KEPT { (edge(2 * i), edge(2 * i + 1)) } else { (0, 0) })
    }
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
/// Bit of [`Record::meta`]: `ack` is 1, `data_ack` 0, and `Record::seq_or_ack` is `seq`,
/// `Record::dsn_or_data_ack` the DSN; without it `seq` is 1, the DSN 0, and they are `ack` and
/// `data_ack`.
const ACK_ONE: u8 = 16;
/// [`Record::meta`] keeps `sack_len` above its five bits (at most 7: `MAX_SACK_BLOCKS` is 4).
const SACK_LEN_SHIFT: u32 = 5;

/// End of a chain of records (no next segment in the skb).
pub(crate) const NO_SEGMENT: u32 = u32::MAX;

/// One segment in flight with where it is going: 36 bytes, no field wider than 4 (so no
/// padding; a 64-bit `ts_val` would round it up to 40).
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Bits 0-31 of `ts_val`.
    ts_lo: u32,
    /// `ts_val - ts_ecr`.
    ts_ecr_back: u32,
    /// `seq` with `ACK_ONE` (then `ack` is 1), else `ack` (then `seq` is 1).
    seq_or_ack: u32,
    /// The DSN with `ACK_ONE` (then `data_ack` is 0), else `data_ack` (then the DSN is 0).
    dsn_or_data_ack: u32,
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
    let dsn_or_data_ack = r.dsn_or_data_ack as u64;
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
        dsn: if ack_one { dsn_or_data_ack } else { 0 },
        data_ack: if ack_one { 0 } else { dsn_or_data_ack },
    }
}

/// The segment a record with SACK pool entry `entry` holds (its edges are kept from `ack`).
fn unpack_sacked(r: &Record, entry: &SackEntry) -> Segment {
    let mut seg = unpack(r, NO_SACK);
    seg.sack = entry.widen(seg.ack);
    seg
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
    fn free_link(&self) -> u32;
    fn set_free_link(&mut self, link: u32);
}

impl FreeLink for Record {
    #[inline(always)]
    fn free_link(&self) -> u32 {
        self.link
    }
    #[inline(always)]
    fn set_free_link(&mut self, link: u32) {
        self.link = link;
    }
}

impl<T> FreeLink for Side<T> {
    #[inline(always)]
    fn free_link(&self) -> u32 {
        self.next
    }
    #[inline(always)]
    fn set_free_link(&mut self, link: u32) {
        self.next = link;
    }
}

/// The SACK entry's link is its last 4 bytes (the skb link while used; unaligned, so kept as
/// bytes).
impl FreeLink for SackEntry {
    #[inline(always)]
    fn free_link(&self) -> u32 {
        u32::from_le_bytes(self.0[SACK_CODES_BYTES..].try_into().expect("4 bytes"))
    }
    #[inline(always)]
    fn set_free_link(&mut self, link: u32) {
        self.0[SACK_CODES_BYTES..].copy_from_slice(&link.to_le_bytes());
    }
}

impl FreeLink for (u32, u32) {
    #[inline(always)]
    fn free_link(&self) -> u32 {
        self.0
    }
    #[inline(always)]
    fn set_free_link(&mut self, link: u32) {
        self.0 = link;
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
            self.free_head = slot.free_link();
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

    /// The value in slot `i`, which is freed: read and freed through one reference (one bounds
    /// test; freeing overwrites the slot's free link, so the value is read first).
    #[inline(always)]
    fn take(&mut self, i: u32) -> T {
        debug_assert!(!self.free_slots().contains(&i), "slot {i} freed twice");
        let head = self.free_head;
        let slot = &mut self.slots[i as usize];
        let value = *slot;
        slot.set_free_link(head);
        self.free_head = i;
        value
    }

    /// The free slots, the last freed first (a walk of the list: for checks, not the hot path).
    fn free_slots(&self) -> Vec<u32> {
        let (mut out, mut i) = (Vec::new(), self.free_head);
        while i != NO_SEGMENT && out.len() <= self.slots.len() {
            out.push(i);
            i = self.slots[i as usize].free_link();
        }
        out
    }
}

/// Where [`InFlight::take`] reads a delivered segment back to, lent to its endpoint: one
/// segment for each kind a record keeps, whose fields that kind fixes are written once, here,
/// and never again (a data segment's `ack` 1 and DATA_ACK 0, a pure ACK's `seq` 1 and DSN 0,
/// both kinds' empty SACK array and `sack_len` 0), and one for a segment with a side-pool
/// entry, written whole. Rebuilt on the stack for every delivery, the segment cost the
/// 64-byte SACK array's zeroing, four selects and eleven stores; here a record's read back
/// writes the seven fields that vary.
#[derive(Debug)]
struct ReadBack {
    /// A data segment's (`ACK_ONE`): `seq`, the DSN and the shared fields vary.
    data: Segment,
    /// A pure ACK's: `ack`, the DATA_ACK and the shared fields vary.
    ack: Segment,
    /// A segment read from a side pool, whole.
    side: Segment,
}

/// A data segment's fixed fields, as the record keeps that kind (`ACK_ONE`).
const DATA_KIND: Segment = Segment {
    flags: 0,
    seq: 0,
    len: 0,
    ack: 1,
    window: 0,
    sack_len: 0,
    sack: NO_SACK,
    ts_val: 0,
    ts_ecr: 0,
    dsn: 0,
    data_ack: 0,
};

/// A pure ACK's fixed fields, as the record keeps that kind.
const ACK_KIND: Segment = Segment { seq: 1, ack: 0, ..DATA_KIND };

impl Default for ReadBack {
    fn default() -> Self {
        Self { data: DATA_KIND, ack: ACK_KIND, side: DATA_KIND }
    }
}

/// The segments in flight.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    records: Pool<Record>,
    sacks: Pool<SackEntry>,
    wide: Pool<Side<Segment>>,
    /// Application messages in flight (flow, tag): a packet carries only a slot here.
    app_msgs: Pool<(u32, u32)>,
    read_back: ReadBack,
}

impl InFlight {
    /// Stores a segment sent on `subflow` of `flow`; returns its handle.
    #[inline(always)]
    pub(crate) fn insert(&mut self, dest: Destination, seg: &Segment) -> u32 {
        // Branch-free tests (this runs for every packet sent), one branch for both: any bit
        // above 32 in the four narrowed fields, above 48 in the send time or above 16 in the
        // length (an echo later than the send time wraps to a value past 32 bits), the one of
        // `seq` and `ack` not kept other than 1, or the one of the DSN and DATA_ACK not kept
        // other than 0; any non-zero byte in the SACK array (valid blocks or not) or in
        // `sack_len` (the side entry refuses a `sack_len` past 3 bits).
        let ts_ecr_back = seg.ts_val.wrapping_sub(seg.ts_ecr);
        let ack_one = seg.ack == 1;
        let seq_or_ack = if ack_one { seg.seq } else { seg.ack };
        // What the kind fixes and the record does not keep, which must hold its value: a data
        // segment's DATA_ACK 0 (`tcp::sender` `build` sends `data_ack_out`, never set in a
        // one-way transfer; its `ack` is 1 by the kind's test), a pure ACK's `seq` 1 and DSN 0
        // (`tcp::receiver`'s ACK leaves the DSN at its default). One select.
        let unkept = if ack_one { seg.data_ack } else { (seg.seq ^ 1) | seg.dsn };
        // With the one of the DSN and DATA_ACK not kept 0, the OR of both is the one kept.
        let dsn_or_data_ack = seg.dsn | seg.data_ack;
        let high = (seq_or_ack | dsn_or_data_ack | seg.window | ts_ecr_back) >> 32
            | seg.ts_val >> 48
            | (seg.len >> 16) as u64
            | unkept;
        // A SACK edge is kept as its distance above `ack`, so one past 32 bits needs no test of
        // its own: above an `ack` that fits, its distance is past the SACK entry's reach unless
        // `ack` is within 16 MiB of 2^32, and then it is read back exactly.
        let sack = seg.sack.iter().fold(seg.sack_len as u64, |acc, &(s, e)| acc | s | e);
        let meta = if dest.to_client { TO_CLIENT } else { 0 }
            | if dest.request { REQUEST } else { 0 }
            | if ack_one { ACK_ONE } else { 0 };
        let mut meta = meta | seg.sack_len << SACK_LEN_SHIFT;
        let mut link = NO_SEGMENT;
        if high | sack != 0 {
            (meta, link) = self.insert_side(meta, high != 0, *seg);
        }
        let record = Record {
            ts_lo: seg.ts_val as u32,
            ts_hi: (seg.ts_val >> 32) as u16,
            ts_ecr_back: ts_ecr_back as u32,
            seq_or_ack: seq_or_ack as u32,
            dsn_or_data_ack: dsn_or_data_ack as u32,
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
        self.app_msgs.take(slot)
    }

    /// The side pool entry of a segment that has one: the whole segment when a value does not
    /// fit the record (`wide`), a SACK block past the kept ones is set, an edge is out of the
    /// SACK entry's reach of `ack` or `sack_len` is past 7, else its SACK array. Returns the
    /// record's `meta` and `link`. The segment is taken by value: the send path's store,
    /// inlined where the sender builds the segment in registers, then writes it to memory on
    /// this cold path only (by reference, it was written out for every segment).
    #[cold]
    #[inline(never)]
    fn insert_side(&mut self, meta: u8, wide: bool, seg: Segment) -> (u8, u32) {
        // Blocks past the kept ones, the edges' reach and a `sack_len` past `meta`'s 3 bits are
        // tested here, off the per-packet path.
        let sack_len_fits = seg.sack_len >> (8 - SACK_LEN_SHIFT) == 0;
        match SackEntry::narrow(&seg.sack, seg.ack) {
            Some(mut entry) if !wide && sack_len_fits => {
                entry.set_free_link(NO_SEGMENT);
                (meta | HAS_SACK, self.sacks.insert(entry))
            }
            _ => (meta | WIDE, self.wide.insert(Side { value: seg, next: NO_SEGMENT })),
        }
    }

    /// Replaces the skb link of record `idx`, wherever it is kept, with `next`; returns the old.
    #[inline]
    fn replace_next(&mut self, idx: u32, next: u32) -> u32 {
        let r = &mut self.records.slots[idx as usize];
        if r.meta & HAS_SACK != 0 {
            let entry = &mut self.sacks.slots[r.link as usize];
            let old = entry.free_link();
            entry.set_free_link(next);
            old
        } else if r.meta & WIDE != 0 {
            std::mem::replace(&mut self.wide.slots[r.link as usize].next, next)
        } else {
            std::mem::replace(&mut r.link, next)
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
            HAS_SACK => unpack_sacked(r, &self.sacks.slots[r.link as usize]),
            _ => self.wide.slots[r.link as usize].value,
        }
    }

    /// The segment `*at`, as it was stored, lent until the next read back; `*at` is freed and
    /// becomes the next segment of its skb ([`NO_SEGMENT`]: none), which stays stored. Inlined
    /// always: every delivered segment is read here. The common record (no side-pool entry) is
    /// read from its slot, which is then freed, into the [`ReadBack`] segment of its kind, so
    /// only the fields that vary are written and nothing is selected; a side-pool entry (an ACK
    /// with SACK blocks, a segment kept whole) is read and freed out of line.
    #[inline(always)]
    pub(crate) fn take(&mut self, at: &mut u32) -> &Segment {
        let i = *at;
        debug_assert!(!self.records.free_slots().contains(&i), "slot {i} freed twice");
        let r = &mut self.records.slots[i as usize];
        if r.meta & (HAS_SACK | WIDE) != 0 {
            let r = self.records.take(i);
            return self.take_side(&r, at);
        }
        // Without a side entry the SACK array is empty and `sack_len` 0 (the insert's test).
        debug_assert_eq!(r.meta >> SACK_LEN_SHIFT, 0);
        let (seq_or_ack, dsn_or_data_ack) = (r.seq_or_ack as u64, r.dsn_or_data_ack as u64);
        let seg = if r.meta & ACK_ONE != 0 {
            let seg = &mut self.read_back.data;
            (seg.seq, seg.dsn) = (seq_or_ack, dsn_or_data_ack);
            seg
        } else {
            let seg = &mut self.read_back.ack;
            (seg.ack, seg.data_ack) = (seq_or_ack, dsn_or_data_ack);
            seg
        };
        let ts_val = (r.ts_hi as u64) << 32 | r.ts_lo as u64;
        seg.flags = r.flags;
        seg.len = r.len as u32;
        seg.window = r.window as u64;
        seg.ts_val = ts_val;
        seg.ts_ecr = ts_val.wrapping_sub(r.ts_ecr_back as u64);
        *at = r.link;
        r.set_free_link(self.records.free_head);
        self.records.free_head = i;
        seg
    }

    /// [`InFlight::take`] of a record `r` (already freed) with a side-pool entry, which is freed.
    #[cold]
    #[inline(never)]
    fn take_side(&mut self, r: &Record, at: &mut u32) -> &Segment {
        let seg = if r.meta & WIDE != 0 {
            let Side { value, next } = self.wide.take(r.link);
            *at = next;
            value
        } else {
            let entry = self.sacks.take(r.link);
            *at = entry.free_link();
            unpack_sacked(r, &entry)
        };
        self.read_back.side = seg;
        &self.read_back.side
    }

    /// Links segment `next` after `idx` in one skb.
    #[inline]
    pub(crate) fn set_next(&mut self, idx: u32, next: u32) {
        self.replace_next(idx, next);
    }

    /// Unlinks segment `idx` from the rest of its skb; returns what followed it.
    #[inline]
    pub(crate) fn take_next(&mut self, idx: u32) -> u32 {
        self.replace_next(idx, NO_SEGMENT)
    }

    /// Frees segment `idx` (delivered or dropped); returns the next segment of its skb
    /// ([`NO_SEGMENT`]: none), which stays stored.
    #[inline]
    pub(crate) fn remove(&mut self, idx: u32) -> u32 {
        let Record { meta, link, .. } = self.records.take(idx);
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
        if meta & HAS_SACK != 0 {
            self.sacks.take(side).free_link()
        } else {
            self.wide.take(side).next
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
#[path = "inflight_tests.rs"]
mod tests;
