//! Transmission: the next segment and its subflow, plain TCP's short path and the general
//! one (moved out of `sender.rs` unchanged but for `poll_transmit_with`, which lends each
//! segment to the caller where it is built).

use super::DataSender;
use crate::tcp::Segment;

impl DataSender {
    /// Next segment to send and its subflow (call until `None`).
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.poll_transmit_with(now_ns, |subflow, seg| (subflow, *seg))
    }

    /// [`DataSender::poll_transmit`], lending the subflow and the segment to `wrap`, called
    /// where the segment is built: a caller that keeps it in its own form (the simulator's
    /// in-flight record) reads its fields there, in registers, with what the sender fixes (a
    /// data segment's `ack` 1, its empty SACK blocks) known, not 128 bytes back from memory.
    #[inline]
    pub fn poll_transmit_with<R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(usize, &Segment) -> R,
    ) -> Option<R> {
        if self.single {
            return self.poll_transmit_single(now_ns, wrap);
        }
        // By reference where the subflow wrote it (moved out, it was loaded whole).
        let out = self.poll_transmit_general(now_ns);
        let (subflow, seg) = out.as_ref()?;
        Some(wrap(*subflow, seg))
    }

    /// [`DataSender::poll_transmit`] of a plain TCP connection (`single`): what the general
    /// path does with one subflow, no scheduler, no stale tracker and no coupled congestion
    /// control, without the parts that then do nothing. No push attempt is noted nor the
    /// MPTCP-level timer armed (both need the stale tracker); the data goes to subflow 0
    /// (`run_scheduler` without a scheduler); the subflow tests its own path (its `path_up`
    /// is set with the connection's bit, in `set_path_up`); and no subflow is marked
    /// (`touch`): without a scheduler nothing refreshes the views and without a coupled
    /// congestion control nothing the coupled summaries, so both dirty masks stay all ones
    /// from construction. `tests::single_path::single_path_is_the_general_path` runs both on
    /// the same inputs.
    #[inline(always)]
    fn poll_transmit_single<R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(usize, &Segment) -> R,
    ) -> Option<R> {
        if self.need_schedule {
            self.need_schedule = false;
            let _ = self.send_new_inline(0, u64::MAX);
        }
        self.subflows[0].poll_transmit_with_large(
            now_ns,
            #[inline(always)]
            |seg| wrap(0, &seg),
        )
    }

    /// [`DataSender::poll_transmit`] of every other connection. Inline, as the short path is:
    /// out of line, every MPTCP poll paid the dispatching function's prologue and a second
    /// call (+0.4 % on FatTree k=4), and plain TCP's counts moved by under 2.5 a packet.
    #[inline(always)]
    fn poll_transmit_general(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if self.need_schedule {
            self.need_schedule = false;
            let push = self.push_attempt();
            self.run_scheduler(now_ns);
            self.arm_rtx_timer(now_ns, push);
        }
        for i in 0..self.subflows.len() {
            if !self.is_path_up(i) {
                continue;
            }
            // A call that sends nothing leaves the views as they are (see `views.rs`).
            // Built in place as the returned pair (see `Sender::poll_transmit_with`).
            let out = self.subflows[i].poll_transmit_with(now_ns, |seg| (i, seg));
            if out.is_some() {
                self.touch(i);
                return out;
            }
        }
        None
    }

    /// Makes a plain TCP sender take the general path (tests: both paths must agree).
    #[cfg(test)]
    pub(crate) fn take_general_path(&mut self) {
        self.single = false;
    }

    /// Makes every subflow compute its probe schedule when noted (tests: both ways agree).
    #[cfg(test)]
    pub(crate) fn take_eager_tlp(&mut self) {
        self.subflows.iter_mut().for_each(|s| s.take_eager_tlp());
    }
}
