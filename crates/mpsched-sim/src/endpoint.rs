//! The bridge between the event loop and the sans-IO protocol endpoints of `mpsched-proto`.
//!
//! The loop sees every endpoint (client or server side of a flow, TCP or MPTCP, sending or
//! receiving) through one small trait, so it has a single code path for all of them. The set
//! of endpoints is closed (a data sender or a data receiver), so the loop holds them as the
//! enum [`Ep`], whose calls are a branch on its variant and a direct call (or the callee's
//! body inline), not a call through a vtable that no small accessor can be inlined into.

use crate::config::{Direction, JoinTimingConfig, LossRecoveryConfig, Protocol, TransportConfig};
use mpsched_proto::cc;
use mpsched_proto::mptcp::{ConnConfig, DataReceiver, DataSender, JoinTiming, Mode};
use mpsched_proto::sched::{self, Scheduler, SubflowView};
use mpsched_proto::tcp::{LossRecovery, TcpConfig};

use mpsched_engine::prefetch;
pub(crate) use mpsched_proto::tcp::Segment;

mod pool;
pub(crate) use pool::EndpointPool;

/// Cache lines an endpoint prefetches at most per object (a data sender is ~11, its TCP
/// subflow ~13, a receiver ~5).
const PREFETCH_LINES: usize = 16;

/// One side of a connection as the event loop drives it.
pub(crate) trait Endpoint {
    /// A segment arrived on `subflow`.
    fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment);
    /// Next segment to send, with its subflow.
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)>;
    /// Absolute time of the next timer, if any.
    fn poll_timeout(&self) -> Option<u64>;
    /// The timer fired.
    fn handle_timeout(&mut self, now_ns: u64);
    /// The local interface of `subflow`'s path went down or came back.
    fn set_path_up(&mut self, subflow: usize, up: bool, now_ns: u64);
    /// The upstream kernel's client interface of `subflow` lost or regained its routes: only
    /// a join created meanwhile notices (its `connect()` fails; proto's `join_route`).
    fn set_route_up(&mut self, _subflow: usize, _up: bool) {}
    /// Data of the other half of the connection (an RPC's requests or responses) leaves this
    /// host on `subflow` at `now_ns`: a receiver's delayed ACK on that subflow rides on it,
    /// and it may enter pingpong mode. True when an ACK was due (the caller drains this
    /// endpoint).
    fn ack_rides_on_data(&mut self, _subflow: usize, _now_ns: u64) -> bool {
        false
    }

    /// Starts loading this endpoint's state into the cache, or (`inner`) the state of its
    /// `subflow`, which is read through the endpoint's: fetch that once the endpoint's own has
    /// had time to arrive. A hint: it changes nothing.
    fn prefetch(&self, _subflow: usize, _inner: bool) {}

    /// Bytes the application may write now (data senders; 0 otherwise).
    fn send_buffer_free(&self) -> u64;
    /// The application writes `bytes`.
    fn write(&mut self, now_ns: u64, bytes: u64);
    /// The application will write no more.
    fn close(&mut self, now_ns: u64);
    /// Everything written has been acknowledged at the connection level.
    fn all_acked(&self) -> bool;
    /// Bytes cumulatively acknowledged at the connection level (data senders; 0 otherwise).
    fn acked_bytes(&self) -> u64;
    /// The connection's first subflow completed its handshake (data receivers).
    fn is_established(&self) -> bool;
    /// Snapshots of the subflows (data senders; empty otherwise).
    fn subflow_views(&self) -> Vec<SubflowView>;
    /// Segments per skb `subflow` transmits now (Linux `tcp_tso_autosize`; 1 for a side
    /// that sends no data).
    fn tso_segments(&self, _subflow: usize) -> u64 {
        1
    }
    /// Payload bytes sent again at the connection level (reinjection and redundancy).
    fn redundant_bytes(&self) -> u64;
    /// The scheduler's actions the connection refused: (action kind, reason, count), non-zero
    /// counts only (data senders; empty otherwise).
    fn rejected_actions(&self) -> Vec<(&'static str, &'static str, u64)> {
        Vec::new()
    }

    /// Bytes delivered in order to the application (data receivers).
    fn delivered_bytes(&self) -> u64;
    /// Time the last in-order byte was delivered.
    fn last_delivery_ns(&self) -> Option<u64>;
    /// (out-of-order bytes, receive-buffer bytes in use, receive window the buffer allows
    /// before out-of-order data is taken off) at the connection level.
    fn receive_buffer(&self) -> (u64, u64, u64);
    /// The connection runs on the upstream kernel's machinery, whose TCP and in-kernel path
    /// manager take no notice of an interface going down (see `run/path_events.rs`).
    fn upstream_kernel(&self) -> bool {
        false
    }
}

/// Checks that a transport can be built (scheduler and congestion-control names and
/// parameters); returns a message naming what is wrong.
pub(crate) fn check_transport(t: &TransportConfig, custom: Option<&dyn CustomSchedulers>) -> Result<(), String> {
    cc::build(&t.cc).map_err(|e| format!("cc: {e}"))?;
    if t.protocol == Protocol::Mptcp {
        build_scheduler(t, custom).map(drop).map_err(|e| format!("scheduler: {e}"))?;
    }
    Ok(())
}

/// Schedulers the registry does not know, supplied by the caller (e.g. classes written in
/// Python). A name the caller knows takes precedence over the registry.
pub trait CustomSchedulers {
    /// A new scheduler for one connection, or `None` when `name` is not a custom one.
    fn build(&self, name: &str) -> Option<Box<dyn Scheduler>>;
}

fn build_scheduler(t: &TransportConfig, custom: Option<&dyn CustomSchedulers>) -> Result<Box<dyn Scheduler>, String> {
    if let Some(s) = custom.and_then(|c| c.build(&t.scheduler)) {
        return Ok(s);
    }
    sched::registry::build(&t.scheduler, &t.scheduler_params).map_err(|e| e.to_string())
}

/// Builds the (client, server) endpoints of a flow over `paths` (one subflow per path). The
/// transport passed [`check_transport`].
/// `nagle`: the application leaves Nagle on (no `TCP_NODELAY`, [`crate::config::FlowConfig::nagle`]).
pub(crate) fn build_endpoints(
    t: Transport<'_>,
    paths: &[usize],
    direction: Direction,
    now_ns: u64,
    custom: Option<&dyn CustomSchedulers>,
    nagle: bool,
    conns: &mut ConnConfigs,
) -> (Ep, Ep) {
    build_pair(t, paths, direction, now_ns, custom, nagle, conns)
}

/// Builds the (client, server) endpoints of a flow's client-to-server stream (an RPC's
/// requests) over `paths`: its own sequence space, subflows and scheduler, as the client's
/// half of a real connection has. The server delays its ACKs as any receiver does: a request's
/// ACK leaves with the response when that goes out on the same subflow (the simulation's
/// `ack_rides_on_data`), else on the delayed-ACK timer or with the next data on that subflow,
/// as on the kernel (docs/testbed.md, "Session 6: RPC latency"). The client's writer takes the
/// flow's `nagle` (mpxfer sets `TCP_NODELAY` on both sockets or on neither).
pub(crate) fn build_request_endpoints(
    t: Transport<'_>,
    paths: &[usize],
    now_ns: u64,
    custom: Option<&dyn CustomSchedulers>,
    nagle: bool,
    conns: &mut ConnConfigs,
) -> (Ep, Ep) {
    build_pair(t, paths, Direction::Upload, now_ns, custom, nagle, conns)
}

/// A transport of the configuration and its index there (what [`ConnConfigs`] tells apart).
#[derive(Clone, Copy)]
pub(crate) struct Transport<'t> {
    pub(crate) index: usize,
    pub(crate) config: &'t TransportConfig,
}

/// What the next flow is built from: the connection settings of the last flow built, (server,
/// client), kept for the next flow with the same transport, paths and Nagle setting (the flows
/// of a study mostly share them: building two `ConnConfig`s a flow cost four allocations and
/// their frees, ~1 000 instructions a flow of 64 KB, ~10 a packet), and the endpoints of
/// finished flows.
#[derive(Default)]
pub(crate) struct ConnConfigs {
    /// (transport index, paths, Nagle) of the last flow, and its settings.
    last: Option<(ConnKey, [ConnConfig; 2])>,
    pub(crate) pool: EndpointPool,
}

/// What tells two flows' connection settings apart: transport index, paths, Nagle.
type ConnKey = (usize, Vec<usize>, bool);

impl ConnConfigs {
    /// The (server, client) settings of a connection of `t` over `paths`, and the pool.
    fn get(&mut self, t: Transport<'_>, paths: &[usize], nagle: bool) -> (&[ConnConfig; 2], &mut EndpointPool) {
        let hit = matches!(&self.last, Some(((i, p, n), _)) if *i == t.index && p == paths && *n == nagle);
        if !hit {
            let conns = [false, true].map(|is_client| conn_config(t.config, paths, nagle, is_client));
            self.last = Some(((t.index, paths.to_vec(), nagle), conns));
        }
        (&self.last.as_ref().expect("just set").1, &mut self.pool)
    }
}

fn build_pair(
    t: Transport<'_>,
    paths: &[usize],
    direction: Direction,
    now_ns: u64,
    custom: Option<&dyn CustomSchedulers>,
    nagle: bool,
    conns: &mut ConnConfigs,
) -> (Ep, Ep) {
    let sender_is_client = direction == Direction::Upload;
    let scheduler = match t.config.protocol {
        Protocol::Mptcp => Some(build_scheduler(t.config, custom).expect("checked by check_transport")),
        Protocol::Tcp => None,
    };
    let ([server_conn, client_conn], pool) = conns.get(t, paths, nagle);
    let (sender_conn, receiver_conn) =
        if sender_is_client { (client_conn, server_conn) } else { (server_conn, client_conn) };
    let mut sender = pool.sender(sender_conn, scheduler);
    let mut receiver = pool.receiver(receiver_conn);
    if sender_is_client {
        sender.0.connect(now_ns);
    } else {
        receiver.0.connect(now_ns);
    }
    let sender = Ep::Sender(sender);
    let receiver = Ep::Receiver(receiver);
    if sender_is_client {
        (sender, receiver)
    } else {
        (receiver, sender)
    }
}

/// The settings of the `is_client` end of a connection of `t` over `paths`.
fn conn_config(t: &TransportConfig, paths: &[usize], nagle: bool, is_client: bool) -> ConnConfig {
    let mode = match t.protocol {
        Protocol::Tcp => Mode::Tcp,
        Protocol::Mptcp => Mode::Mptcp,
    };
    ConnConfig {
        backup: paths.iter().map(|p| t.backup_paths.contains(p)).collect(),
        tcp: TcpConfig {
            mss_bytes: t.mss_bytes,
            init_cwnd_segments: t.init_cwnd_segments,
            loss_recovery: match t.loss_recovery {
                LossRecoveryConfig::RackTlp => LossRecovery::RackTlp,
                LossRecoveryConfig::Rfc6675 => LossRecovery::Rfc6675,
            },
            nagle,
            ..TcpConfig::default()
        },
        rcv_buf_bytes: t.rcv_buf_bytes,
        snd_buf_bytes: t.snd_buf_bytes,
        cc: t.cc.clone(),
        join_timing: match t.join_timing {
            JoinTimingConfig::Oot => JoinTiming::AfterSynAck,
            JoinTimingConfig::FullyEstablished => JoinTiming::FullyEstablished,
        },
        rcv_buf_autotuning: t.rcv_buf_autotuning,
        // The kernel sizes both buffers itself unless the application sets SO_RCVBUF /
        // SO_SNDBUF (the testbed sets neither): one switch for "the kernel's buffers".
        snd_buf_autotuning: t.rcv_buf_autotuning,
        stale_loss_cnt: t.stale_loss_cnt,
        ..ConnConfig::new(mode, is_client, paths.len())
    }
}

/// One side of a connection as the loop holds it: boxed, so a flow's two sides take a pointer
/// and a tag each, as a `Box<dyn Endpoint>` did.
pub(crate) enum Ep {
    Sender(Box<SenderEp>),
    Receiver(Box<ReceiverEp>),
}

/// Implements [`Endpoint`] for [`Ep`]: each method calls the variant's own (`mut` methods
/// take `&mut self`, `ref` methods `&self`).
macro_rules! ep_delegate {
    (
        mut: { $(fn $m:ident($($ma:ident: $mt:ty),*) $(-> $mr:ty)?;)* }
        ref: { $(fn $r:ident($($ra:ident: $rt:ty),*) $(-> $rr:ty)?;)* }
    ) => {
        impl Endpoint for Ep {
            $(
                #[inline]
                fn $m(&mut self, $($ma: $mt),*) $(-> $mr)? {
                    match self {
                        Ep::Sender(e) => e.$m($($ma),*),
                        Ep::Receiver(e) => e.$m($($ma),*),
                    }
                }
            )*
            $(
                #[inline]
                fn $r(&self, $($ra: $rt),*) $(-> $rr)? {
                    match self {
                        Ep::Sender(e) => e.$r($($ra),*),
                        Ep::Receiver(e) => e.$r($($ra),*),
                    }
                }
            )*
        }
    };
}

ep_delegate! {
    mut: {
        fn handle_segment(now_ns: u64, subflow: usize, seg: &Segment);
        fn poll_transmit(now_ns: u64) -> Option<(usize, Segment)>;
        fn handle_timeout(now_ns: u64);
        fn set_path_up(subflow: usize, up: bool, now_ns: u64);
        fn set_route_up(subflow: usize, up: bool);
        fn ack_rides_on_data(subflow: usize, now_ns: u64) -> bool;
        fn write(now_ns: u64, bytes: u64);
        fn close(now_ns: u64);
    }
    ref: {
        fn poll_timeout() -> Option<u64>;
        fn prefetch(subflow: usize, inner: bool);
        fn send_buffer_free() -> u64;
        fn all_acked() -> bool;
        fn acked_bytes() -> u64;
        fn is_established() -> bool;
        fn subflow_views() -> Vec<SubflowView>;
        fn tso_segments(subflow: usize) -> u64;
        fn redundant_bytes() -> u64;
        fn rejected_actions() -> Vec<(&'static str, &'static str, u64)>;
        fn delivered_bytes() -> u64;
        fn last_delivery_ns() -> Option<u64>;
        fn receive_buffer() -> (u64, u64, u64);
        fn upstream_kernel() -> bool;
    }
}

/// What the loop does with each segment an endpoint emits, where the endpoint emits it
/// ([`Ep::poll_transmit_to`]). A trait, not a closure: its method is inlined at each call
/// site (a closure called from both of `Ep`'s arms stayed a call: +64 instructions a packet).
pub(crate) trait StoreSegment {
    type Out;
    fn store(&mut self, subflow: usize, seg: &Segment) -> Self::Out;
}

impl Ep {
    /// [`Endpoint::poll_transmit`], handing the subflow and the segment to `to` (the loop's
    /// drain stores it in flight there). A data sender does so where it builds the segment, in
    /// its own frame ([`SenderEp::poll_transmit_to`]).
    #[inline(always)]
    pub(crate) fn poll_transmit_to<S: StoreSegment>(&mut self, now_ns: u64, to: &mut S) -> Option<S::Out> {
        match self {
            Ep::Sender(e) => e.poll_transmit_to(now_ns, to),
            Ep::Receiver(e) => {
                // Read by reference where the receiver wrote it (`map` moved it out first: the
                // whole segment loaded into registers and spilled, ~12 instructions an ACK).
                let out = e.poll_transmit(now_ns);
                let (subflow, seg) = out.as_ref()?;
                Some(to.store(*subflow, seg))
            }
        }
    }
}

/// The data-sending side of a connection.
pub(crate) struct SenderEp(DataSender);

impl SenderEp {
    /// [`DataSender::poll_transmit_with`] storing through `to` (one instance: the drain's).
    /// No inline attribute, as `DataSender::poll_transmit` had none: LLVM inlines it into the
    /// drain (plain and PGO builds); with `#[inline(never)]` the PGO build paid the call, ~20
    /// instructions a packet (benches/RESULTS.md, Session 18, perf18t).
    fn poll_transmit_to<S: StoreSegment>(&mut self, now_ns: u64, to: &mut S) -> Option<S::Out> {
        self.0.poll_transmit_with(
            now_ns,
            #[inline(always)]
            |subflow, seg| to.store(subflow, seg),
        )
    }
}

impl Endpoint for SenderEp {
    // A call of its own: inlined into the loop's `deliver` beside the other side's, it costs
    // the loop ~11 instructions a packet more in register traffic (callgrind).
    #[inline(never)]
    fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment) {
        self.0.handle_segment(now_ns, subflow, seg);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.0.poll_transmit(now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.0.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.0.handle_timeout(now_ns);
    }
    fn prefetch(&self, subflow: usize, inner: bool) {
        if !inner {
            prefetch::object(&self.0, PREFETCH_LINES);
        } else if let Some(s) = self.0.subflows().get(subflow) {
            prefetch::object(s, PREFETCH_LINES);
        }
    }
    fn set_path_up(&mut self, subflow: usize, up: bool, now_ns: u64) {
        self.0.set_path_up(subflow, up, now_ns);
    }
    fn set_route_up(&mut self, subflow: usize, up: bool) {
        self.0.set_route_up(subflow, up);
    }
    fn send_buffer_free(&self) -> u64 {
        self.0.send_buffer_free()
    }
    fn write(&mut self, now_ns: u64, bytes: u64) {
        self.0.write(bytes, now_ns);
    }
    fn close(&mut self, _now_ns: u64) {
        self.0.close();
    }
    fn all_acked(&self) -> bool {
        self.0.is_done()
    }
    fn acked_bytes(&self) -> u64 {
        self.0.data_acked()
    }
    fn is_established(&self) -> bool {
        // An RPC client writes once its first subflow is up (`connect()` has returned).
        self.0.subflows()[0].is_established()
    }
    fn subflow_views(&self) -> Vec<SubflowView> {
        let mut v = Vec::new();
        self.0.subflow_views(&mut v);
        v
    }
    fn tso_segments(&self, subflow: usize) -> u64 {
        self.0.subflows()[subflow].tso_segments()
    }
    fn redundant_bytes(&self) -> u64 {
        let r = self.0.resent();
        r.reinject_bytes + r.opportunistic_bytes + r.redundant_bytes
    }
    fn rejected_actions(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.0.rejected_actions().map(|(kind, why, n)| (kind, why.name(), n)).collect()
    }
    fn delivered_bytes(&self) -> u64 {
        0
    }
    fn last_delivery_ns(&self) -> Option<u64> {
        None
    }
    fn receive_buffer(&self) -> (u64, u64, u64) {
        (0, 0, 0)
    }
    fn upstream_kernel(&self) -> bool {
        self.0.upstream_stale_detection()
    }
}

/// The data-receiving side of a connection; its application reads at once.
pub(crate) struct ReceiverEp(DataReceiver);

impl Endpoint for ReceiverEp {
    // A call of its own: inlined into the loop's `deliver` beside the other side's, it costs
    // the loop ~11 instructions a packet more in register traffic (callgrind).
    #[inline(never)]
    fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment) {
        self.0.handle_segment(now_ns, subflow, seg);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.0.poll_transmit(now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.0.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.0.handle_timeout(now_ns);
    }
    fn prefetch(&self, subflow: usize, inner: bool) {
        if !inner {
            prefetch::object(&self.0, PREFETCH_LINES);
        } else if let Some(r) = self.0.subflows().get(subflow) {
            prefetch::object(r, PREFETCH_LINES);
        }
    }
    fn set_path_up(&mut self, subflow: usize, up: bool, _now_ns: u64) {
        self.0.set_path_up(subflow, up);
    }
    fn ack_rides_on_data(&mut self, subflow: usize, now_ns: u64) -> bool {
        self.0.ack_rides_on_data(subflow, now_ns)
    }
    fn set_route_up(&mut self, subflow: usize, up: bool) {
        self.0.set_route_up(subflow, up);
    }
    fn send_buffer_free(&self) -> u64 {
        0
    }
    fn write(&mut self, _now_ns: u64, _bytes: u64) {}
    fn close(&mut self, _now_ns: u64) {}
    fn all_acked(&self) -> bool {
        true
    }
    fn acked_bytes(&self) -> u64 {
        0
    }
    fn is_established(&self) -> bool {
        self.0.is_established()
    }
    fn subflow_views(&self) -> Vec<SubflowView> {
        Vec::new()
    }
    fn redundant_bytes(&self) -> u64 {
        0
    }
    fn delivered_bytes(&self) -> u64 {
        self.0.delivered_bytes()
    }
    fn last_delivery_ns(&self) -> Option<u64> {
        self.0.last_delivery_ns()
    }
    fn receive_buffer(&self) -> (u64, u64, u64) {
        (self.0.ofo_bytes(), self.0.buffer_in_use_bytes(), self.0.rcv_wnd_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(cc: &str, backup_paths: Vec<usize>) -> TransportConfig {
        TransportConfig {
            backup_paths,
            ..TransportConfig::with_defaults(Protocol::Mptcp, "minrtt", cc, vec![0, 1], 6 << 20, 4 << 20)
        }
    }

    /// Whatever came before, the kept settings are those built afresh for this flow: a change of
    /// transport, paths or Nagle rebuilds them, the same ones are reused.
    #[test]
    fn kept_connection_settings_are_those_of_the_flow() {
        let ts = [transport("cubic", vec![1]), transport("lia", vec![0])];
        let mut conns = ConnConfigs::default();
        let flows: [(usize, &[usize], bool); 7] = [
            (0, &[0, 1], false),
            (0, &[0, 1], false),
            (0, &[1], false),
            (0, &[1], true),
            (1, &[1], true),
            (1, &[0, 1], true),
            (0, &[0, 1], false),
        ];
        for (index, paths, nagle) in flows {
            let t = Transport { index, config: &ts[index] };
            let kept = conns.get(t, paths, nagle).0.clone();
            let fresh = [false, true].map(|is_client| conn_config(&ts[index], paths, nagle, is_client));
            assert_eq!(kept, fresh, "transport {index}, paths {paths:?}, nagle {nagle}");
        }
    }
}
