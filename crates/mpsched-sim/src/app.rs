//! Applications: what each flow's endpoints write and read, and when a flow is complete.
//!
//! The event loop calls [`App::feed`] after anything happens on the data-sending side (the
//! application writes what the send buffer takes), [`App::on_receive`] after anything happens
//! on the receiving side, [`App::on_wakeup`] at the times [`App::next_wakeup_ns`] asks for,
//! and [`App::completion_ns`] to learn whether the flow is over.

use crate::config::AppConfig;
use crate::endpoint::{Endpoint, Ep};
use crate::units::{cbr_blocks, interval_units, Trigger, UnitApp, UnitRecord};

/// Bytes a sized or bulk sender hands the socket per write: the testbed's `mpxfer` waits for
/// `POLLOUT` and then makes one non-blocking `send` of at most this much (`CHUNK_BYTES`,
/// native/mpxfer.c). With the socket writable only while a third of its send buffer is free,
/// a buffer larger than three chunks is kept between two thirds full and two thirds plus a
/// chunk, not topped up to full.
const WRITE_CHUNK_BYTES: u64 = 256 * 1024;

/// Writes up to `want_bytes` a chunk at a time while the socket takes more; returns the bytes
/// written. (Inline: after every ACK a bulk or sized sender handles; a call costs more than
/// its loop, whose sender accessors inline since the endpoints are an enum.)
#[inline(always)]
fn write_chunks(now_ns: u64, sender: &mut Ep, want_bytes: u64) -> u64 {
    let mut written = 0;
    while written < want_bytes {
        let n = sender.send_buffer_free().min(WRITE_CHUNK_BYTES).min(want_bytes - written);
        if n == 0 {
            break;
        }
        sender.write(now_ns, n);
        written += n;
    }
    written
}

/// The application of one flow.
#[derive(Debug)]
pub(crate) enum App {
    /// Writes `remaining_bytes` more as fast as the send buffer allows, then closes.
    Sized { size_bytes: u64, remaining_bytes: u64, closed: bool },
    /// Writes without end until `stop_ns`, then closes.
    Bulk { stop_ns: u64, closed: bool },
    /// Web objects, CBR blocks or transfers on one connection. Boxed: it is ~300 bytes, and
    /// inline it made every flow's slot that size (the slot a delivered packet reads first;
    /// long-lived flows are `Bulk` or `Sized`, a few bytes).
    Units(Box<UnitApp>),
}

impl App {
    /// A units application, boxed.
    fn boxed(unit: UnitApp) -> Self {
        App::Units(Box::new(unit))
    }

    /// The application of a flow that connects at `start_ns`.
    pub(crate) fn new(cfg: &AppConfig, start_ns: u64) -> Self {
        match cfg {
            &AppConfig::Sized { size_bytes } => App::Sized { size_bytes, remaining_bytes: size_bytes, closed: false },
            &AppConfig::Bulk { stop_ns } => App::Bulk { stop_ns, closed: false },
            AppConfig::Web { objects_bytes, request_bytes, request_retry_ns } => App::boxed(UnitApp::new(
                start_ns,
                objects_bytes.clone(),
                Trigger::Request {
                    request_bytes: *request_bytes,
                    retry_ns: *request_retry_ns,
                    interval_ns: None,
                    window: 1,
                },
            )),
            &AppConfig::Rpc { requests, request_bytes, response_bytes, interval_ns, concurrency, deadline_ns } => {
                // An open loop has no limit on the requests outstanding.
                let window = if interval_ns.is_some() { usize::MAX } else { concurrency.unwrap_or(1) as usize };
                let trigger = Trigger::Rpc { request_bytes, interval_ns, window, written_bytes: 0 };
                App::boxed(
                    UnitApp::new(start_ns, vec![response_bytes; requests as usize], trigger).with_deadline(deadline_ns),
                )
            }
            &AppConfig::Cbr { rate_bps, block_bytes, stop_ns } => {
                let n = cbr_blocks(start_ns, stop_ns, block_bytes, rate_bps) as usize;
                App::boxed(UnitApp::new(start_ns, vec![block_bytes; n], Trigger::Periodic { block_bytes, rate_bps }))
            }
            &AppConfig::Messages { size_bytes, interval_ns, deadline_ns, stop_ns } => {
                let n = interval_units(start_ns, stop_ns, interval_ns) as usize;
                App::boxed(
                    UnitApp::new(start_ns, vec![size_bytes; n], Trigger::Interval { interval_ns })
                        .with_deadline(deadline_ns),
                )
            }
            AppConfig::Transfers { sizes_bytes, offsets_ns } => {
                let trigger = match offsets_ns {
                    Some(o) => Trigger::Offsets(o.clone()),
                    None => Trigger::AfterAck,
                };
                App::boxed(UnitApp::new(start_ns, sizes_bytes.clone(), trigger))
            }
        }
    }

    /// The sending application writes what the send buffer takes now. (Inline: after every
    /// ACK a sender handles.)
    #[inline(always)]
    pub(crate) fn feed(&mut self, now_ns: u64, sender: &mut Ep) {
        match self {
            App::Sized { remaining_bytes, closed, .. } => {
                if *closed {
                    return;
                }
                *remaining_bytes -= write_chunks(now_ns, sender, *remaining_bytes);
                if *remaining_bytes == 0 {
                    sender.close(now_ns);
                    *closed = true;
                }
            }
            App::Bulk { stop_ns, closed } => {
                if *closed {
                    return;
                }
                if now_ns < *stop_ns {
                    write_chunks(now_ns, sender, u64::MAX);
                } else {
                    sender.close(now_ns);
                    *closed = true;
                }
            }
            App::Units(u) => u.feed(now_ns, sender),
        }
    }

    /// The receiving side saw activity (new in-order bytes may have arrived). Inline: for
    /// every packet a receiver handles, and most applications do nothing here.
    #[inline(always)]
    pub(crate) fn on_receive(&mut self, now_ns: u64, receiver: &Ep) {
        if let App::Units(u) = self {
            u.on_receive(now_ns, receiver);
        }
    }

    /// A message the receiving application sends to the sending one (a web request): (tag,
    /// bytes on the wire). The event loop carries it up the flow's first path.
    pub(crate) fn poll_message(&mut self) -> Option<(u32, u64)> {
        match self {
            App::Units(u) => u.poll_message(),
            _ => None,
        }
    }

    /// True for an application whose client writes data to the server too (an RPC's
    /// requests): its flow has a request half-connection.
    pub(crate) fn carries_requests(cfg: &AppConfig) -> bool {
        matches!(cfg, AppConfig::Rpc { .. })
    }

    /// The client writes its requests into the client-to-server stream (`sender`).
    pub(crate) fn feed_requests(&mut self, now_ns: u64, sender: &mut Ep) {
        if let App::Units(u) = self {
            u.feed_requests(now_ns, sender);
        }
    }

    /// The server's side of the client-to-server stream (`receiver`) saw activity; true when
    /// whole requests arrived (the server has responses to write).
    pub(crate) fn on_requests(&mut self, receiver: &Ep) -> bool {
        match self {
            App::Units(u) => u.on_requests(receiver),
            _ => false,
        }
    }

    /// A message from the receiving application arrived at the sending one.
    pub(crate) fn on_message(&mut self, tag: u32) {
        if let App::Units(u) = self {
            u.on_message(tag);
        }
    }

    /// The application's timer fired (before the loop lets both sides act).
    pub(crate) fn on_wakeup(&mut self, now_ns: u64) {
        if let App::Units(u) = self {
            u.on_wakeup(now_ns);
        }
    }

    /// Per-unit records (blocks, objects, transfers); empty for sized and bulk flows.
    pub(crate) fn unit_records(&self) -> Vec<UnitRecord> {
        match self {
            App::Units(u) => u.records(),
            _ => Vec::new(),
        }
    }

    /// Next time the application wants to act on its own (a timer of the app), if any.
    /// Asked after every event of a flow: the common answers inline, a unit app's out of line.
    #[inline]
    pub(crate) fn next_wakeup_ns(&self) -> Option<u64> {
        match self {
            // A bulk sender must close at its stop time even if no ACK arrives then.
            App::Bulk { stop_ns, closed: false } => Some(*stop_ns),
            App::Units(u) => u.next_wakeup_ns(),
            _ => None,
        }
    }

    /// The flow's completion time, once it is complete.
    pub(crate) fn completion_ns(&self, now_ns: u64, sender: &Ep, receiver: &Ep) -> Option<u64> {
        match self {
            App::Sized { size_bytes, .. } => {
                (receiver.delivered_bytes() >= *size_bytes).then(|| receiver.last_delivery_ns().unwrap_or(now_ns))
            }
            // Complete once the application stopped writing and everything it wrote arrived: the
            // end is the last byte's delivery (what was still in the send buffer at the stop
            // counts, so goodput = bytes delivered / (end - start) is honest).
            App::Bulk { closed, .. } => {
                (*closed && sender.all_acked()).then(|| receiver.last_delivery_ns().unwrap_or(now_ns))
            }
            App::Units(u) => u.completion_ns(),
        }
    }

    /// Short name for records ("sized", "bulk", "web", "rpc", "cbr", "messages", "transfers").
    pub(crate) fn kind(cfg: &AppConfig) -> &'static str {
        match cfg {
            AppConfig::Sized { .. } => "sized",
            AppConfig::Bulk { .. } => "bulk",
            AppConfig::Web { .. } => "web",
            AppConfig::Rpc { .. } => "rpc",
            AppConfig::Cbr { .. } => "cbr",
            AppConfig::Messages { .. } => "messages",
            AppConfig::Transfers { .. } => "transfers",
        }
    }

    /// Bytes the application transfers, when known in advance.
    pub(crate) fn size_bytes(cfg: &AppConfig, start_ns: u64) -> Option<u64> {
        match cfg {
            &AppConfig::Sized { size_bytes } => Some(size_bytes),
            AppConfig::Bulk { .. } => None,
            AppConfig::Web { objects_bytes: s, .. } | AppConfig::Transfers { sizes_bytes: s, .. } => {
                Some(s.iter().fold(0u64, |a, &b| a.saturating_add(b)))
            }
            &AppConfig::Rpc { requests, response_bytes, .. } => Some(requests.saturating_mul(response_bytes)),
            &AppConfig::Cbr { rate_bps, block_bytes, stop_ns } => {
                Some(cbr_blocks(start_ns, stop_ns, block_bytes, rate_bps).saturating_mul(block_bytes))
            }
            &AppConfig::Messages { size_bytes, interval_ns, stop_ns, .. } => {
                Some(interval_units(start_ns, stop_ns, interval_ns).saturating_mul(size_bytes))
            }
        }
    }

    /// Application units the connection carries one after another (objects, blocks,
    /// transfers): 1 for a sized flow on its fresh connection, 0 for bulk.
    pub(crate) fn units(cfg: &AppConfig, start_ns: u64) -> u64 {
        match cfg {
            AppConfig::Sized { .. } => 1,
            AppConfig::Bulk { .. } => 0,
            AppConfig::Web { objects_bytes: s, .. } | AppConfig::Transfers { sizes_bytes: s, .. } => s.len() as u64,
            &AppConfig::Rpc { requests, .. } => requests,
            &AppConfig::Cbr { rate_bps, block_bytes, stop_ns } => cbr_blocks(start_ns, stop_ns, block_bytes, rate_bps),
            &AppConfig::Messages { interval_ns, stop_ns, .. } => interval_units(start_ns, stop_ns, interval_ns),
        }
    }

    /// True when every byte the flow was meant to move has arrived (for the record).
    pub(crate) fn completed(cfg: &AppConfig, start_ns: u64, receiver: &Ep, end_ns: Option<u64>) -> bool {
        match cfg {
            AppConfig::Bulk { .. } => end_ns.is_some(),
            _ => Self::size_bytes(cfg, start_ns).is_some_and(|n| receiver.delivered_bytes() >= n),
        }
    }
}
