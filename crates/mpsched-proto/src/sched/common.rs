//! Building blocks shared by the OOT-derived schedulers (`reference/schedulers.md` §0.4, §2.1).
//!
//! The out-of-tree kernel's `get_available_subflow` (minRTT selector) is reused, with a
//! different metric or availability test, by ECF, BLEST, CFS, freeze, STTF and the
//! reinjection paths of several others; it lives here once, generic over both.
//!
//! A "segment" of the kernel is represented by the set of subflows it was already sent on
//! (`mask`, bit `i` = subflow `i`): 0 for new data, the chunk's `sent_on_mask` for a
//! reinjection.

use super::{Action, ConnView, ResendKind, SubflowId, SubflowView, UnackedChunk};

/// The event methods of a scheduler that wraps another (`self.inner`) and adds nothing to
/// them: each event reaches the inner scheduler unchanged. Used inside `impl Scheduler`.
macro_rules! forward_events_to_inner {
    () => {
        fn on_subflow_added(&mut self, id: SubflowId, now_ns: u64) {
            self.inner.on_subflow_added(id, now_ns)
        }
        fn on_ack(
            &mut self,
            id: SubflowId,
            acked_bytes: u64,
            rtt_sample_ns: Option<u64>,
            now_ns: u64,
        ) {
            self.inner.on_ack(id, acked_bytes, rtt_sample_ns, now_ns)
        }
        fn on_data_ack(&mut self, data_acked: u64, now_ns: u64) {
            self.inner.on_data_ack(data_acked, now_ns)
        }
        fn on_loss(&mut self, id: SubflowId, kind: LossKind, now_ns: u64) {
            self.inner.on_loss(id, kind, now_ns)
        }
        fn upstream_stale_detection(&self) -> bool {
            self.inner.upstream_stale_detection()
        }
        fn on_send_buffer_fixed(&mut self, snd_buf_bytes: u64) {
            self.inner.on_send_buffer_fixed(snd_buf_bytes)
        }
    };
}
pub(crate) use forward_events_to_inner;

/// Bit of subflow `id` in a path mask (subflows beyond 63 never appear in masks).
#[inline]
pub(crate) fn bit(id: SubflowId) -> u64 {
    if id < 64 {
        1 << id
    } else {
        0
    }
}

/// OOT `used(sf, seg)`: the segment already went out on `sf`.
#[inline]
pub(crate) fn used(sf: &SubflowView, mask: u64) -> bool {
    mask & bit(sf.id) != 0
}

/// One pass of OOT `select_among` over the subflows `wanted` accepts.
///
/// Returns `(best, force)`: `force` means "take this answer" (an unused subflow was found, or
/// one exists but is only temporarily busy, in which case `best` is `None` = wait for it).
/// Iteration is newest-first and the comparison strict `<`, so exact ties go to the most
/// recently added subflow, as in the OOT list (subflows are inserted at the list head).
fn select_among(
    subflows: &[SubflowView],
    mask: u64,
    wanted: impl Fn(&SubflowView) -> bool,
    metric: &impl Fn(&SubflowView) -> u64,
    avail: &impl Fn(&SubflowView) -> bool,
) -> (Option<SubflowId>, bool) {
    let mut best: Option<(SubflowId, u64)> = None;
    let mut found_unused = false;
    let mut unused_busy = false;
    for sf in subflows.iter().rev() {
        if !wanted(sf) {
            continue;
        }
        let unused = !used(sf, mask);
        if !unused && found_unused {
            continue;
        }
        if !sf.usable() {
            continue; // def_unavailable
        }
        if !avail(sf) {
            unused_busy |= unused; // temp_unavailable
            continue;
        }
        if unused && !found_unused {
            best = None;
            found_unused = true;
        }
        let m = metric(sf);
        if best.is_none_or(|(_, b)| m < b) {
            best = Some((sf.id, m));
        }
    }
    let best = best.map(|(id, _)| id);
    let force = if best.is_some() {
        found_unused
    } else {
        unused_busy
    };
    (best, force)
}

/// OOT `get_available_subflow` (§2.1) with a pluggable metric (lower is better) and
/// temporary-availability test (`avail`, applied to usable subflows only).
///
/// Active subflows first; backups only when no active one is usable at all, or for a
/// reinjection every active subflow already carried. If the segment already went through every
/// usable subflow, its mask is forgotten once and the choice repeated (reuse allowed).
pub(crate) fn oot_select(
    subflows: &[SubflowView],
    mask: u64,
    metric: impl Fn(&SubflowView) -> u64,
    avail: impl Fn(&SubflowView) -> bool,
) -> Option<SubflowId> {
    if mask == 0 {
        // New data (every decision but a reinjection's): no subflow carried it yet, so the
        // passes below reduce to this one (checked against them by a test).
        let (sf, force) = select_unused(subflows, false, &metric, &avail);
        if force {
            return sf;
        }
        return select_unused(subflows, true, &metric, &avail).0;
    }
    oot_select_general(subflows, mask, metric, avail)
}

/// [`select_among`] for a segment no subflow carried (`mask` 0) over the backups (`backup`)
/// or the active subflows.
#[inline]
fn select_unused(
    subflows: &[SubflowView],
    backup: bool,
    metric: &impl Fn(&SubflowView) -> u64,
    avail: &impl Fn(&SubflowView) -> bool,
) -> (Option<SubflowId>, bool) {
    let mut best: Option<(SubflowId, u64)> = None;
    let mut busy = false;
    for sf in subflows.iter().rev() {
        if sf.backup != backup || !sf.usable() {
            continue;
        }
        if !avail(sf) {
            busy = true;
            continue;
        }
        let m = metric(sf);
        if best.is_none_or(|(_, b)| m < b) {
            best = Some((sf.id, m));
        }
    }
    (best.map(|(id, _)| id), best.is_some() || busy)
}

/// [`oot_select`] for any `mask`.
fn oot_select_general(
    subflows: &[SubflowView],
    mask: u64,
    metric: impl Fn(&SubflowView) -> u64,
    avail: impl Fn(&SubflowView) -> bool,
) -> Option<SubflowId> {
    let mut mask = mask;
    let mut looped = false;
    loop {
        let (sf, force) = select_among(subflows, mask, |s| !s.backup, &metric, &avail);
        if force {
            return sf;
        }
        let (sf, force) = select_among(subflows, mask, |s| s.backup, &metric, &avail);
        if !force && mask != 0 && !looped {
            mask = 0;
            looped = true;
            continue;
        }
        return sf;
    }
}

/// The plain OOT minRTT selector: lowest `srtt_ns` among available subflows.
pub(crate) fn min_rtt_select(subflows: &[SubflowView], mask: u64) -> Option<SubflowId> {
    oot_select(subflows, mask, |s| s.srtt_ns, SubflowView::available)
}

/// The lowest-`srtt_ns` usable subflow, ignoring cwnd (ECF/BLEST "fastest"). Ties go to the
/// newest subflow (OOT list order).
///
/// Deviation from the OOT ECF/BLEST loops, which also consider backups: backups count only
/// when no active subflow is usable. Otherwise a fast backup, which minRTT never picks while an
/// active subflow exists, would make ECF wait for it forever at the end of a flow.
pub(crate) fn fastest_usable(subflows: &[SubflowView]) -> Option<SubflowId> {
    let any_active = subflows.iter().any(|s| s.usable() && !s.backup);
    let mut best: Option<(SubflowId, u64)> = None;
    for sf in subflows
        .iter()
        .rev()
        .filter(|s| s.usable() && !(any_active && s.backup))
    {
        if best.is_none_or(|(_, b)| sf.srtt_ns < b) {
            best = Some((sf.id, sf.srtt_ns));
        }
    }
    best.map(|(id, _)| id)
}

/// Smallest MSS over the subflows (1448 when there are none, so callers never divide by 0).
pub(crate) fn conn_mss(view: &ConnView<'_>) -> u64 {
    view.subflows
        .iter()
        .map(|s| s.mss_bytes)
        .filter(|&m| m > 0)
        .min()
        .unwrap_or(1448)
}

/// OOT connection-window test for new data: the next segment (`min(unsent, mss)` bytes from
/// `next_dsn`) must end at or below `wnd_end` (RFC 8684 §3.3.4; OOT `mptcp_next_segment`).
pub(crate) fn new_data_fits_window(view: &ConnView<'_>, mss_bytes: u64) -> bool {
    let need = view.unsent_bytes.min(mss_bytes.max(1));
    need > 0 && view.rwnd_room_bytes() >= need
}

/// New data is waiting but the receive window does not let the next segment out.
pub(crate) fn rwnd_blocked(view: &ConnView<'_>) -> bool {
    view.unsent_bytes > 0 && !new_data_fits_window(view, conn_mss(view))
}

/// Bytes of new data a cwnd-respecting scheduler hands to `sf` now: its free window, bounded
/// by what is unsent and what the receive window allows (OOT `limit`, §1.1).
pub(crate) fn new_data_burst(view: &ConnView<'_>, sf: &SubflowView) -> u64 {
    sf.free_cwnd_bytes()
        .min(view.unsent_bytes)
        .min(view.rwnd_room_bytes())
}

/// Hands subflow `id` its burst of new data ([`new_data_burst`]) if the connection window lets
/// the next segment out: the send step of the minRTT family.
pub(crate) fn send_burst(view: &ConnView<'_>, id: SubflowId, out: &mut Vec<Action>) {
    let sf = &view.subflows[id];
    if !new_data_fits_window(view, sf.mss_bytes) {
        return;
    }
    let bytes = new_data_burst(view, sf);
    if bytes > 0 {
        out.push(Action::SendNew {
            subflow: id,
            max_bytes: bytes,
        });
    }
}

/// Hands subflow `id` one segment of new data if the connection window lets it out: the
/// schedulers that queue beyond cwnd (OTIAS, STTF) decide segment by segment.
pub(crate) fn send_one_segment(view: &ConnView<'_>, id: SubflowId, out: &mut Vec<Action>) {
    let sf = &view.subflows[id];
    if !new_data_fits_window(view, sf.mss_bytes) {
        return;
    }
    let bytes = sf
        .mss_bytes
        .max(1)
        .min(view.unsent_bytes)
        .min(view.rwnd_room_bytes());
    out.push(Action::SendNew {
        subflow: id,
        max_bytes: bytes,
    });
}

/// Queue bound of the schedulers that queue beyond cwnd (OTIAS, STTF, DAPS): the subflow's
/// unsent queue already holds `limit_cwnds` windows (at least one segment). 0 = no bound of our
/// own: the connection's send buffer bounds the queues, as the socket buffer does in Linux.
pub(crate) fn queue_full(sf: &SubflowView, limit_cwnds: u64) -> bool {
    limit_cwnds != 0
        && sf.queued_bytes >= limit_cwnds.saturating_mul(sf.cwnd_bytes).max(sf.mss_bytes)
}

/// First reinjection-queue chunk with bytes not yet DATA_ACKed, clipped to start at
/// `data_acked`.
pub(crate) fn reinject_head(view: &ConnView<'_>) -> Option<UnackedChunk> {
    view.reinject_queue
        .iter()
        .find_map(|c| clip_unacked(c, view.data_acked))
}

/// The part of `c` at or above `data_acked`, or `None` when all of it is acknowledged.
pub(crate) fn clip_unacked(c: &UnackedChunk, data_acked: u64) -> Option<UnackedChunk> {
    let end = c.dsn.saturating_add(c.len);
    if end <= data_acked || c.len == 0 {
        return None;
    }
    let dsn = c.dsn.max(data_acked);
    Some(UnackedChunk {
        dsn,
        len: end - dsn,
        sent_on_mask: c.sent_on_mask,
    })
}

/// OOT reinjection step shared by the minRTT family: the head of the reinjection queue goes to
/// the subflow `select(mask)` picks, limited to that subflow's free window. Returns `Some(())`
/// when the queue is non-empty (the caller must not send new data: reinjections come first),
/// after pushing the action if a subflow was found.
pub(crate) fn serve_reinject(
    view: &ConnView<'_>,
    out: &mut Vec<Action>,
    select: impl FnOnce(u64) -> Option<SubflowId>,
) -> Option<()> {
    let head = reinject_head(view)?;
    if let Some(id) = select(head.sent_on_mask) {
        let sf = &view.subflows[id];
        // Within the free window; a scheduler that queues beyond cwnd gets one segment.
        let room = sf.free_cwnd_bytes();
        let len = if room > 0 {
            head.len.min(room)
        } else {
            head.len.min(sf.mss_bytes.max(1))
        };
        out.push(Action::Resend {
            subflow: id,
            dsn: head.dsn,
            len,
            kind: ResendKind::Reinject,
        });
    }
    Some(())
}

/// A scheduler configuration that can check its values after deserialisation (ranges serde
/// cannot express). The registry calls it, so a bad value is an error at build time rather
/// than a stalled connection later.
pub(crate) trait CheckConfig {
    /// `Err` names the offending parameter and the accepted range.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Saturating `a * b / c` in 128-bit arithmetic (0 when `c == 0`).
#[inline]
pub(crate) fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return 0;
    }
    let r = (a as u128) * (b as u128) / (c as u128);
    r.min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod select_tests {
    use super::*;
    use proptest::prelude::*;

    fn view() -> impl Strategy<Value = SubflowView> {
        (any::<[bool; 5]>(), 0u64..4, 0u64..6, 0u64..6).prop_map(|(b, srtt, cwnd, used)| {
            SubflowView {
                established: b[0],
                backup: b[1],
                potentially_failed: b[2],
                in_loss_recovery: b[3],
                srtt_ns: srtt,
                mss_bytes: if b[4] { 10 } else { 0 },
                cwnd_bytes: cwnd * 10,
                in_flight_bytes: used * 10,
                ..SubflowView::default()
            }
        })
    }

    proptest! {
        /// The new-data fast path picks what the general passes pick (ties included).
        #[test]
        fn new_data_selection_equals_the_general_passes(mut subflows in proptest::collection::vec(view(), 0..7)) {
            for (i, s) in subflows.iter_mut().enumerate() {
                s.id = i;
            }
            let fast = oot_select(&subflows, 0, |s| s.srtt_ns, SubflowView::available);
            let general = oot_select_general(&subflows, 0, |s| s.srtt_ns, SubflowView::available);
            prop_assert_eq!(fast, general);
            let fast = oot_select(&subflows, 0, |s| s.srtt_ns, SubflowView::usable);
            let general = oot_select_general(&subflows, 0, |s| s.srtt_ns, SubflowView::usable);
            prop_assert_eq!(fast, general);
        }
    }
}

/// Hand-built views for the unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::super::{ConnView, SubflowView, UnackedChunk};

    /// MSS used by every fixture, bytes.
    pub(crate) const MSS: u64 = 1000;
    /// One millisecond, ns.
    pub(crate) const MS: u64 = 1_000_000;

    /// An established, idle subflow with an RTT sample: `srtt_ms`, cwnd `cwnd_segs` segments.
    pub(crate) fn sf(id: usize, srtt_ms: u64, cwnd_segs: u64) -> SubflowView {
        SubflowView {
            id,
            path_index: id,
            established: true,
            has_rtt_sample: true,
            srtt_ns: srtt_ms * MS,
            rttvar_ns: srtt_ms * MS / 8,
            min_rtt_ns: srtt_ms * MS,
            last_rtt_ns: srtt_ms * MS,
            rto_ns: 200 * MS + srtt_ms * MS,
            mss_bytes: MSS,
            cwnd_bytes: cwnd_segs * MSS,
            ssthresh_bytes: u64::MAX,
            pacing_rate_bps: (cwnd_segs * MSS * 8 * 1000 * 12 / 10)
                .checked_div(srtt_ms)
                .unwrap_or(0),
            ..SubflowView::default()
        }
    }

    /// A connection view with `unsent` bytes to send, a wide-open window and nothing unacked.
    pub(crate) fn conn<'a>(subflows: &'a [SubflowView], unsent: u64) -> ConnView<'a> {
        ConnView {
            now_ns: 1_000 * MS,
            subflows,
            unsent_bytes: unsent,
            app_done: false,
            next_dsn: 0,
            data_acked: 0,
            unacked: &[],
            reinject_queue: &[],
            peer_rwnd_bytes: 1 << 30,
        }
    }

    /// A chunk `[dsn, dsn+len)` sent on the subflows in `on`.
    pub(crate) fn chunk(dsn: u64, len: u64, on: &[usize]) -> UnackedChunk {
        UnackedChunk {
            dsn,
            len,
            sent_on_mask: on.iter().fold(0, |m, &i| m | (1 << i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn min_rtt_select_prefers_lowest_srtt_then_waits_instead_of_spilling_to_backup() {
        let mut s = [sf(0, 50, 10), sf(1, 10, 10), sf(2, 5, 10)];
        s[2].backup = true;
        assert_eq!(min_rtt_select(&s, 0), Some(1));
        // Every active subflow cwnd-full: wait, do not use the backup.
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        s[1].in_flight_bytes = s[1].cwnd_bytes;
        assert_eq!(min_rtt_select(&s, 0), None);
        // No active subflow usable at all: the backup carries the data.
        s[0].established = false;
        s[1].potentially_failed = true;
        assert_eq!(min_rtt_select(&s, 0), Some(2));
    }

    #[test]
    fn a_window_full_of_small_segments_has_no_room_whatever_their_bytes() {
        // Ten 160-byte messages in flight fill a ten-segment window (Linux counts packets);
        // by their 1 600 bytes alone the window would look nearly empty.
        let mut s = [sf(0, 10, 10), sf(1, 50, 10)];
        s[0].in_flight_bytes = 1_600;
        assert_eq!(s[0].free_cwnd_bytes(), 8 * MSS);
        s[0].segs_in_use = 10;
        assert_eq!(s[0].free_cwnd_bytes(), 0);
        assert_eq!(min_rtt_select(&s, 0), Some(1));
        s[0].segs_in_use = 9;
        assert_eq!(s[0].free_cwnd_bytes(), MSS);
        assert_eq!(min_rtt_select(&s, 0), Some(0));
    }

    #[test]
    fn reinjection_prefers_a_subflow_that_has_not_carried_it_and_reuses_when_all_have() {
        let s = [sf(0, 10, 10), sf(1, 50, 10)];
        assert_eq!(min_rtt_select(&s, 0b01), Some(1));
        assert_eq!(min_rtt_select(&s, 0b11), Some(0));
    }

    #[test]
    fn a_fast_backup_is_not_the_fastest_while_an_active_subflow_exists() {
        let mut s = [sf(0, 50, 10), sf(1, 5, 10)];
        s[1].backup = true;
        assert_eq!(fastest_usable(&s), Some(0));
        s[0].potentially_failed = true;
        assert_eq!(fastest_usable(&s), Some(1));
    }

    #[test]
    fn ties_go_to_the_newest_subflow() {
        let s = [sf(0, 10, 10), sf(1, 10, 10)];
        assert_eq!(min_rtt_select(&s, 0), Some(1));
    }
}
