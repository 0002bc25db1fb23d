//! Applications made of units carried one after another on one connection: web objects
//! fetched one request at a time, constant-bit-rate blocks, and transfers on a long-lived
//! connection. Each unit is a byte range of the connection's stream; the application records
//! when it issued the unit and when its last byte reached the receiving application in order
//! (the `blocks` table), so application delay and its variation can be computed per unit.
//!
//! The sending and receiving applications of a flow share this one struct (the simulator sees
//! both ends); what crosses the network between them is data on the connection and, for web
//! fetches, request packets the event loop carries (see [`UnitApp::poll_message`]). An RPC's
//! requests are data too: the client writes them into the connection's client-to-server
//! stream (the event loop's request half-connection, see `run/request.rs`).

use std::collections::VecDeque;

use crate::endpoint::{Endpoint, Ep};

/// What makes the next unit start.
#[derive(Debug)]
pub(crate) enum Trigger {
    /// Unit `k` is issued at `start + k * bytes * 8 / rate` (CBR; integer time without drift).
    Periodic { block_bytes: u64, rate_bps: u64 },
    /// Unit `k` is issued at `start + k * interval_ns` (real-time messages).
    Interval { interval_ns: u64 },
    /// Unit `k` is issued at `start + offsets_ns[k]`.
    Offsets(Vec<u64>),
    /// Unit `k` is issued once unit `k - 1` is DATA_ACKed at the sender (unit 0 at the start).
    AfterAck,
    /// The receiving client requests unit `k` (open loop: at `start + k * interval_ns`; closed
    /// loop: once fewer than `window` units are requested and not complete; a web page is the
    /// closed loop with a window of 1); the server writes the units in order, each once its
    /// request and every earlier one arrived. A request not arrived after `retry_ns` is resent.
    Request { request_bytes: u64, retry_ns: u64, interval_ns: Option<u64>, window: usize },
    /// An RPC: requested as [`Trigger::Request`] (open or closed loop), but the client writes
    /// each request of `request_bytes` into the client-to-server stream once its connection is
    /// established ([`UnitApp::feed_requests`]), and the server writes response `k` once
    /// requests `0..=k` have arrived whole ([`UnitApp::on_requests`]). TCP repairs lost ones.
    /// `written_bytes`: request bytes written so far (the client's state, kept here so that
    /// the other unit apps do not carry it).
    Rpc { request_bytes: u64, written_bytes: u64, interval_ns: Option<u64>, window: usize },
}

/// One unit of a flow, for the `blocks` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitRecord {
    /// Unit index in the flow.
    pub(crate) unit: u64,
    /// Bytes of the unit.
    pub(crate) size_bytes: u64,
    /// Time the application issued it (wrote it, or sent the request for it), ns.
    pub(crate) sent_ns: u64,
    /// Time its last byte was delivered in order, ns.
    pub(crate) delivered_ns: Option<u64>,
    /// Largest acceptable application delay, ns (messages with a deadline).
    pub(crate) deadline_ns: Option<u64>,
}

/// The application of a unit-based flow.
#[derive(Debug)]
pub(crate) struct UnitApp {
    start_ns: u64,
    trigger: Trigger,
    sizes_bytes: Vec<u64>,
    /// Stream offset one past each unit's last byte.
    ends: Vec<u64>,
    sent_ns: Vec<u64>,
    delivered_ns: Vec<u64>,
    /// Units issued so far (`sent_ns` holds their times).
    issued: usize,
    /// Bytes the sending application has to write (issued units; requested ones for web).
    writable_bytes: u64,
    /// Bytes written into the send buffer.
    written_bytes: u64,
    closed: bool,
    /// Requests: how many reached the server with every earlier one (the server's next).
    requests_arrived: usize,
    /// Requests: which reached the server.
    arrived: Vec<bool>,
    /// Requests: last (re)transmission time of each issued one.
    request_sent_ns: Vec<u64>,
    /// Requests waiting for the event loop to carry them.
    outgoing: VecDeque<u32>,
    /// Requests: the connection was seen established (an open loop issues from then on).
    established: bool,
    /// Deadline of every unit (application delay), ns.
    deadline_ns: Option<u64>,
}

impl UnitApp {
    /// An application issuing `sizes_bytes` (each positive) as `trigger` says, from `start_ns`.
    pub(crate) fn new(start_ns: u64, sizes_bytes: Vec<u64>, trigger: Trigger) -> Self {
        let ends = sizes_bytes
            .iter()
            .scan(0u64, |acc, &s| {
                *acc = acc.saturating_add(s);
                Some(*acc)
            })
            .collect();
        Self {
            start_ns,
            trigger,
            ends,
            sent_ns: Vec::with_capacity(sizes_bytes.len()),
            delivered_ns: Vec::with_capacity(sizes_bytes.len()),
            sizes_bytes,
            issued: 0,
            writable_bytes: 0,
            written_bytes: 0,
            closed: false,
            requests_arrived: 0,
            arrived: Vec::new(),
            request_sent_ns: Vec::new(),
            outgoing: VecDeque::new(),
            established: false,
            deadline_ns: None,
        }
    }

    /// Every unit must be delivered within `deadline_ns` of its issue (for the records).
    pub(crate) fn with_deadline(mut self, deadline_ns: Option<u64>) -> Self {
        self.deadline_ns = deadline_ns;
        self
    }

    /// Number of units.
    pub(crate) fn units(&self) -> usize {
        self.sizes_bytes.len()
    }

    /// Bytes of all units.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Issue time of unit `k` for the clocked triggers.
    fn due_ns(&self, k: usize) -> Option<u64> {
        match &self.trigger {
            Trigger::Periodic { block_bytes, rate_bps } => {
                let t = k as u128 * *block_bytes as u128 * 8_000_000_000 / (*rate_bps).max(1) as u128;
                Some(self.start_ns.saturating_add(u64::try_from(t).unwrap_or(u64::MAX)))
            }
            Trigger::Interval { interval_ns } => {
                Some(self.start_ns.saturating_add((k as u64).saturating_mul(*interval_ns)))
            }
            Trigger::Offsets(o) => Some(self.start_ns.saturating_add(o[k])),
            Trigger::Request { interval_ns: Some(i), .. } | Trigger::Rpc { interval_ns: Some(i), .. } => {
                Some(self.start_ns.saturating_add((k as u64).saturating_mul(*i)))
            }
            _ => None,
        }
    }

    fn issue(&mut self, at_ns: u64) {
        self.sent_ns.push(at_ns);
        self.issued += 1;
    }

    /// Sending side: issue what is due and write what the send buffer takes.
    pub(crate) fn feed(&mut self, now_ns: u64, sender: &mut Ep) {
        if self.closed {
            return;
        }
        let n = self.units();
        match self.trigger {
            Trigger::Periodic { .. } | Trigger::Interval { .. } | Trigger::Offsets(_) => {
                while self.issued < n {
                    let due = self.due_ns(self.issued).unwrap_or(u64::MAX);
                    if due > now_ns {
                        break;
                    }
                    self.writable_bytes = self.ends[self.issued];
                    self.issue(due);
                }
            }
            Trigger::AfterAck => {
                if self.issued < n && (self.issued == 0 || sender.acked_bytes() >= self.ends[self.issued - 1]) {
                    self.writable_bytes = self.ends[self.issued];
                    self.issue(now_ns);
                }
            }
            Trigger::Request { .. } | Trigger::Rpc { .. } => {} // requests arriving raise writable_bytes
        }
        let n_bytes = sender.send_buffer_free().min(self.writable_bytes - self.written_bytes);
        if n_bytes > 0 {
            sender.write(now_ns, n_bytes);
            self.written_bytes += n_bytes;
        }
        if self.written_bytes >= self.total_bytes() {
            sender.close(now_ns);
            self.closed = true;
        }
    }

    /// Receiving side: record completed units; a web client requests the next object.
    pub(crate) fn on_receive(&mut self, now_ns: u64, receiver: &Ep) {
        let delivered = receiver.delivered_bytes();
        let at = receiver.last_delivery_ns().unwrap_or(now_ns);
        while self.delivered_ns.len() < self.issued && delivered >= self.ends[self.delivered_ns.len()] {
            self.delivered_ns.push(at);
        }
        if let Trigger::Request { interval_ns, window, .. } = self.trigger {
            self.established |= receiver.is_established();
            if !self.established {
                return;
            }
            while let Some(at_ns) = self.next_request_at(now_ns, interval_ns, window) {
                self.outgoing.push_back(self.issued as u32);
                self.request_sent_ns.push(now_ns);
                self.arrived.push(false);
                self.issue(at_ns);
            }
        }
    }

    /// Issue time of the next request if the client requests it now: closed loop (at most
    /// `window` requests not yet answered, a web page: one at a time, HTTP/1.1 without
    /// pipelining, as wget and curl) now; open loop at its time, stamped with it (a wait for
    /// the handshake counts in its latency). `None`: not now.
    fn next_request_at(&self, now_ns: u64, interval_ns: Option<u64>, window: usize) -> Option<u64> {
        if self.issued >= self.units() {
            return None;
        }
        match interval_ns {
            Some(_) => self.due_ns(self.issued).filter(|&t| t <= now_ns),
            None => (self.issued - self.delivered_ns.len() < window).then_some(now_ns),
        }
    }

    /// RPC client: once the connection is established (`connect()` has returned), issue the
    /// requests due and write them into the client-to-server stream (`sender`), closing it
    /// after the last.
    pub(crate) fn feed_requests(&mut self, now_ns: u64, sender: &mut Ep) {
        let Trigger::Rpc { request_bytes, interval_ns, window, written_bytes } = self.trigger else { return };
        let total = self.units() as u64 * request_bytes;
        self.established |= sender.is_established();
        if !self.established || written_bytes == total {
            return;
        }
        while let Some(at_ns) = self.next_request_at(now_ns, interval_ns, window) {
            self.issue(at_ns);
        }
        // Validated: every request's bytes together fit u64.
        let owed = self.issued as u64 * request_bytes - written_bytes;
        let n = sender.send_buffer_free().min(owed);
        if n > 0 {
            sender.write(now_ns, n);
            if let Trigger::Rpc { written_bytes, .. } = &mut self.trigger {
                *written_bytes += n;
            }
            // The last request written: the client closes its side (once: nothing is written after).
            if written_bytes + n == total {
                sender.close(now_ns);
            }
        }
    }

    /// RPC server: the client-to-server stream delivered more (`receiver`); every request now
    /// whole lets the server write its response (in order). True when there is more to write.
    pub(crate) fn on_requests(&mut self, receiver: &Ep) -> bool {
        let Trigger::Rpc { request_bytes, .. } = self.trigger else { return false };
        let whole = (receiver.delivered_bytes() / request_bytes).min(self.issued as u64) as usize;
        if whole <= self.requests_arrived {
            return false;
        }
        self.requests_arrived = whole;
        self.writable_bytes = self.ends[whole - 1];
        true
    }

    /// A message the receiving application sends back to the sender now: (unit, bytes).
    pub(crate) fn poll_message(&mut self) -> Option<(u32, u64)> {
        let Trigger::Request { request_bytes, .. } = self.trigger else { return None };
        self.outgoing.pop_front().map(|k| (k, request_bytes))
    }

    /// The request for unit `unit` reached the server: it writes every unit whose request
    /// arrived with all earlier ones (in order, as requests on one connection are read).
    pub(crate) fn on_message(&mut self, unit: u32) {
        if let Some(a) = self.arrived.get_mut(unit as usize) {
            *a = true;
        }
        while self.requests_arrived < self.arrived.len() && self.arrived[self.requests_arrived] {
            self.writable_bytes = self.ends[self.requests_arrived];
            self.requests_arrived += 1;
        }
    }

    /// The application's own timer fired: the client resends each request not yet arrived
    /// `retry_ns` after its last transmission.
    pub(crate) fn on_wakeup(&mut self, now_ns: u64) {
        if let Trigger::Request { retry_ns, .. } = self.trigger {
            for k in self.requests_arrived..self.arrived.len() {
                if !self.arrived[k] && self.request_sent_ns[k].saturating_add(retry_ns) <= now_ns {
                    self.outgoing.push_back(k as u32);
                    self.request_sent_ns[k] = now_ns;
                }
            }
        }
    }

    /// Next time the application wants to act on its own.
    #[inline(never)]
    pub(crate) fn next_wakeup_ns(&self) -> Option<u64> {
        match self.trigger {
            Trigger::Periodic { .. } | Trigger::Interval { .. } | Trigger::Offsets(_) => {
                (self.issued < self.units()).then(|| self.due_ns(self.issued)).flatten()
            }
            Trigger::AfterAck => None,
            Trigger::Request { interval_ns, .. } | Trigger::Rpc { interval_ns, .. } => {
                // Web requests not arrived are resent (an RPC's are TCP's to repair).
                let retry = match self.trigger {
                    Trigger::Request { retry_ns, .. } => (self.requests_arrived..self.arrived.len())
                        .filter(|&k| !self.arrived[k])
                        .map(|k| self.request_sent_ns[k].saturating_add(retry_ns))
                        .min(),
                    _ => None,
                };
                // An open loop's next request, once the connection is up to carry it.
                let next = (interval_ns.is_some() && self.established && self.issued < self.units())
                    .then(|| self.due_ns(self.issued))
                    .flatten();
                retry.into_iter().chain(next).min()
            }
        }
    }

    /// Time the last unit was complete, once every unit is.
    pub(crate) fn completion_ns(&self) -> Option<u64> {
        if self.delivered_ns.len() == self.units() {
            self.delivered_ns.last().copied()
        } else {
            None
        }
    }

    /// Records of the issued units.
    pub(crate) fn records(&self) -> Vec<UnitRecord> {
        (0..self.issued)
            .map(|k| UnitRecord {
                unit: k as u64,
                size_bytes: self.sizes_bytes[k],
                sent_ns: self.sent_ns[k],
                delivered_ns: self.delivered_ns.get(k).copied(),
                deadline_ns: self.deadline_ns,
            })
            .collect()
    }
}

/// Number of CBR blocks issued from `start_ns` until before `stop_ns`.
pub(crate) fn cbr_blocks(start_ns: u64, stop_ns: u64, block_bytes: u64, rate_bps: u64) -> u64 {
    if stop_ns <= start_ns || block_bytes == 0 || rate_bps == 0 {
        return 0;
    }
    // Block k leaves at floor(k * bits * 1e9 / rate) < span: k < span * rate / (bits * 1e9).
    let span = (stop_ns - start_ns) as u128;
    let bits_ns = block_bytes as u128 * 8_000_000_000;
    let n = (span * rate_bps as u128).div_ceil(bits_ns);
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Number of messages issued every `interval_ns` from `start_ns` until before `stop_ns`.
pub(crate) fn interval_units(start_ns: u64, stop_ns: u64, interval_ns: u64) -> u64 {
    if stop_ns <= start_ns || interval_ns == 0 {
        return 0;
    }
    (stop_ns - start_ns).div_ceil(interval_ns)
}
