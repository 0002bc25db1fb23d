//! A rate change re-times a link's waiting packets (`Link::retime_waiting`, snd15), and what the
//! htb transmitter keeps across it; kept apart from `link.rs` (a child module: it reads the link's
//! private queue and pipe).

use super::Link;
use crate::net::capacity::Service;

impl<P> Link<P> {
    /// The transmitter is htb's (its bucket shapes at any rate in force).
    #[inline]
    pub(super) fn htb(&self) -> bool {
        self.bucket.as_ref().is_some_and(|b| b.pays_after())
    }

    /// The transmitter's rate changed at `now_ns` (a rate collapse set or lifted): the packets
    /// still waiting in the queue are served at the new rate, from when the packet in service
    /// ends (which finishes as scheduled). Linux's qdiscs work that way: htb and tbf price each
    /// packet at dequeue with the rate in force then (`tc class change` / `tc qdisc change`
    /// acts on the queue's contents at once), so the 50 kB a queue holds when a 20 Mbit/s link
    /// collapses to 500 kbit/s take 0.8 s to drain, and those queued at 500 kbit/s when it
    /// recovers drain in 20 ms. Their arrival times in the pipe move by the same amount (FIFO
    /// order kept). Returns the pipe head's new arrival time when it moved: the caller
    /// schedules an arrival event then (the old one finds the head not yet arrived and is
    /// ignored, see [`Link::head_arrived`]). Links whose impairments come before the queue,
    /// or whose jitter reorders packets, keep their schedule (their queue runs ahead of the
    /// clock, or their packets' arrival events are already scheduled one by one).
    pub(crate) fn retime_waiting(&mut self, now_ns: u64) -> Option<u64> {
        if !self.after_queue || self.reorders() {
            return None;
        }
        // (The re-timed entries' pipe arrivals move: `backlog_set_times` moves the derived
        // entries to the ring first, so that their records are no longer read from the pipe.)
        self.settle::<false>(now_ns);
        let first = self.backlog_iter().position(|p| p.start_ns > now_ns)?;
        if self.backlog_iter().skip(first).any(|p| p.end_ns == u64::MAX) {
            return None; // stuck behind a capacity that never resumes
        }
        let mut free_ns =
            if first == 0 { now_ns } else { self.backlog_get(first - 1).expect("first is in the backlog").end_ns };
        let first_start_ns = self.backlog_get(first).expect("first is in the backlog").start_ns;
        if let Some(b) = self.bucket.as_mut().filter(|b| b.pays_after()) {
            b.rewind(now_ns, first_start_ns);
        }
        // An htb class shapes at the rate in force (its bucket's: `set_impairment`).
        let rate_limit_bps = if self.plain || self.htb() { None } else { self.impairment.rate_limit_bps };
        // Shift of each re-timed packet that is in the pipe, in order.
        let mut shifts: Vec<i128> = Vec::new();
        for i in first..self.backlog_len() {
            let p = self.backlog_get(i).expect("i is in the backlog");
            // On a link whose impairments come after the queue a packet reached the queue
            // when the link accepted it, by `now_ns`, so the transmitter takes it as soon as
            // it is free (`free_ns` is `now_ns` or a later end of service).
            let start_ns = free_ns;
            let (start_ns, end_ns) = match (&mut self.bucket, rate_limit_bps) {
                (_, Some(rate_bps)) => {
                    (start_ns, start_ns + crate::time::serialization_ns(u64::from(p.bytes), rate_bps.max(1)))
                }
                (Some(bucket), None) => {
                    // A packet accepted under the collapse may be longer than the bucket:
                    // it leaves at once (the collapse let it in).
                    let t = bucket.depart(start_ns, u64::from(p.bytes)).unwrap_or(start_ns);
                    (t, t)
                }
                (None, None) => {
                    let mut s = start_ns;
                    loop {
                        match self.capacity.serve(s, u64::from(p.bytes)) {
                            Service::DoneAt(t) => break (s, t),
                            Service::WaitUntil(t) => s = t,
                            Service::Never => break (s, u64::MAX),
                        }
                    }
                }
            };
            if p.piped {
                shifts.push(end_ns as i128 - p.end_ns as i128);
            }
            self.backlog_set_times(i, start_ns, end_ns);
            free_ns = end_ns;
        }
        self.free_at_ns = free_ns;
        // The re-timed packets are the pipe's last `shifts.len()` entries.
        let n = self.pipe.len();
        let from = n.checked_sub(shifts.len())?;
        let old_head_ns = self.pipe_front_arrive_ns();
        let mut last_ns = if from == 0 { 0 } else { self.pipe_arrive_ns(from - 1) };
        for (k, shift) in shifts.into_iter().enumerate() {
            let t = (self.pipe_arrive_ns(from + k) as i128 + shift).clamp(0, u64::MAX as i128) as u64;
            last_ns = t.max(last_ns);
            self.pipe_set_arrive_ns(from + k, last_ns);
        }
        if n > 0 {
            self.last_arrival_ns = self.pipe_arrive_ns(n - 1);
        }
        let new_head_ns = self.pipe_front_arrive_ns();
        (new_head_ns != old_head_ns).then_some(new_head_ns).flatten()
    }
}
