//! Applications: what each flow's endpoints write and read, and when a flow is complete.
//!
//! The event loop calls [`App::feed`] after anything happens on the data-sending side (the
//! application writes what the send buffer takes), [`App::on_receive`] after anything happens
//! on the receiving side, [`App::on_wakeup`] at the times [`App::next_wakeup_ns`] asks for,
//! and [`App::completion_ns`] to learn whether the flow is over.

use crate::config::AppConfig;
use crate::endpoint::Endpoint;

/// The application of one flow.
#[derive(Debug)]
pub(crate) enum App {
    /// Writes `remaining_bytes` more as fast as the send buffer allows, then closes.
    Sized { size_bytes: u64, remaining_bytes: u64, closed: bool },
    /// Writes without end until `stop_ns`, then closes.
    Bulk { stop_ns: u64, closed: bool },
}

impl App {
    pub(crate) fn new(cfg: &AppConfig) -> Self {
        match *cfg {
            AppConfig::Sized { size_bytes } => App::Sized { size_bytes, remaining_bytes: size_bytes, closed: false },
            AppConfig::Bulk { stop_ns } => App::Bulk { stop_ns, closed: false },
        }
    }

    /// The sending application writes what the send buffer takes now.
    pub(crate) fn feed(&mut self, now_ns: u64, sender: &mut dyn Endpoint) {
        match self {
            App::Sized { remaining_bytes, closed, .. } => {
                if *closed {
                    return;
                }
                let n = sender.send_buffer_free().min(*remaining_bytes);
                if n > 0 {
                    sender.write(now_ns, n);
                    *remaining_bytes -= n;
                }
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
                    let free = sender.send_buffer_free();
                    if free > 0 {
                        sender.write(now_ns, free);
                    }
                } else {
                    sender.close(now_ns);
                    *closed = true;
                }
            }
        }
    }

    /// The receiving side saw activity (new in-order bytes may have arrived).
    pub(crate) fn on_receive(&mut self, now_ns: u64, receiver: &dyn Endpoint) {
        let _ = (now_ns, receiver);
    }

    /// Next time the application wants to act on its own (a timer of the app), if any.
    pub(crate) fn next_wakeup_ns(&self) -> Option<u64> {
        match self {
            // A bulk sender must close at its stop time even if no ACK arrives then.
            App::Bulk { stop_ns, closed: false } => Some(*stop_ns),
            _ => None,
        }
    }

    /// The flow's completion time, once it is complete.
    pub(crate) fn completion_ns(&self, now_ns: u64, sender: &dyn Endpoint, receiver: &dyn Endpoint) -> Option<u64> {
        match self {
            App::Sized { size_bytes, .. } => {
                (receiver.delivered_bytes() >= *size_bytes).then(|| receiver.last_delivery_ns().unwrap_or(now_ns))
            }
            App::Bulk { stop_ns, closed } => (*closed && sender.all_acked()).then_some(*stop_ns),
        }
    }

    /// Short name for records ("sized", "bulk").
    pub(crate) fn kind(cfg: &AppConfig) -> &'static str {
        match cfg {
            AppConfig::Sized { .. } => "sized",
            AppConfig::Bulk { .. } => "bulk",
        }
    }

    /// Bytes the application transfers, when known in advance.
    pub(crate) fn size_bytes(cfg: &AppConfig) -> Option<u64> {
        match *cfg {
            AppConfig::Sized { size_bytes } => Some(size_bytes),
            AppConfig::Bulk { .. } => None,
        }
    }

    /// True when every byte the flow was meant to move has arrived (for the record).
    pub(crate) fn completed(cfg: &AppConfig, receiver: &dyn Endpoint, end_ns: Option<u64>) -> bool {
        match *cfg {
            AppConfig::Sized { size_bytes } => receiver.delivered_bytes() >= size_bytes,
            AppConfig::Bulk { .. } => end_ns.is_some(),
        }
    }
}
