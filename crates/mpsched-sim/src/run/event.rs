//! The events of the loop, and their 32-bit form in the event queue (a 4-bit kind and a 28-bit
//! index: a flow, a segment, a link, a path event; 2^28 of any of them does not fit memory).

use mpsched_engine::event::PackedEvent;
use mpsched_engine::net::NetEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    Net(NetEvent),
    FlowStart(u32),
    /// Timer of a flow's endpoint (`client` selects the side, `request` the half-connection).
    Timer {
        flow: u32,
        client: bool,
        request: bool,
    },
    /// The application of a flow asked to act at this time.
    AppWakeup(u32),
    Sample,
    CrossSend(u32),
    /// Start of path event `i`.
    Path(u32),
    /// End (recovery) of path event `i`.
    PathEnd(u32),
    /// Segment `idx` arrived earlier; its endpoint's host handles it now (`host_delay`).
    HostRx(u32),
}

/// Bits of the index; the kind is above them.
const INDEX_BITS: u32 = 28;
/// The network's events, kinds 0-2 (packed here, not by `NetEvent`'s own `PackedEvent`, so
/// that the loop's decode is one match on the kind: nesting the network's packing put a
/// second match inside the first, ~6 instructions an event).
const NET_ARRIVE: u32 = 0;
const NET_PIPE_ARRIVE: u32 = 1;
const NET_ENQUEUE: u32 = 2;
const FLOW_START: u32 = 3;
const TIMER_SERVER: u32 = 4;
const TIMER_CLIENT: u32 = 5;
const APP_WAKEUP: u32 = 6;
const SAMPLE: u32 = 7;
const CROSS_SEND: u32 = 8;
const PATH: u32 = 9;
const PATH_END: u32 = 10;
const HOST_RX: u32 = 11;
/// The request half-connection's timers (an RPC's client-to-server stream).
const TIMER_SERVER_REQUEST: u32 = 12;
const TIMER_CLIENT_REQUEST: u32 = 13;

#[inline]
fn code(kind: u32, index: u32) -> u32 {
    assert!(index < 1 << INDEX_BITS, "event index {index} does not fit {INDEX_BITS} bits");
    kind << INDEX_BITS | index
}

impl PackedEvent for Event {
    /// Always inlined: every push site knows its variant, so the match folds away (left to
    /// itself the compiler calls it from the network's scheduling of each hop, ~16
    /// instructions a packet).
    #[inline(always)]
    fn pack(self) -> u32 {
        match self {
            Event::Net(NetEvent::Arrive(i)) => code(NET_ARRIVE, i),
            Event::Net(NetEvent::PipeArrive(l)) => code(NET_PIPE_ARRIVE, l),
            Event::Net(NetEvent::Enqueue(i)) => code(NET_ENQUEUE, i),
            Event::FlowStart(f) => code(FLOW_START, f),
            Event::Timer { flow, client, request } => {
                let kind = match (client, request) {
                    (false, false) => TIMER_SERVER,
                    (true, false) => TIMER_CLIENT,
                    (false, true) => TIMER_SERVER_REQUEST,
                    (true, true) => TIMER_CLIENT_REQUEST,
                };
                code(kind, flow)
            }
            Event::AppWakeup(f) => code(APP_WAKEUP, f),
            Event::Sample => code(SAMPLE, 0),
            Event::CrossSend(c) => code(CROSS_SEND, c),
            Event::Path(e) => code(PATH, e),
            Event::PathEnd(e) => code(PATH_END, e),
            Event::HostRx(idx) => code(HOST_RX, idx),
        }
    }

    #[inline]
    fn unpack(code: u32) -> Self {
        if let Some(ne) = net_event(code) {
            return Event::Net(ne);
        }
        let index = code & ((1 << INDEX_BITS) - 1);
        match code >> INDEX_BITS {
            FLOW_START => Event::FlowStart(index),
            TIMER_SERVER => Event::Timer { flow: index, client: false, request: false },
            TIMER_CLIENT => Event::Timer { flow: index, client: true, request: false },
            TIMER_SERVER_REQUEST => Event::Timer { flow: index, client: false, request: true },
            TIMER_CLIENT_REQUEST => Event::Timer { flow: index, client: true, request: true },
            APP_WAKEUP => Event::AppWakeup(index),
            SAMPLE => Event::Sample,
            CROSS_SEND => Event::CrossSend(index),
            PATH => Event::Path(index),
            PATH_END => Event::PathEnd(index),
            HOST_RX => Event::HostRx(index),
            kind => unreachable!("event kind {kind} is never packed"),
        }
    }
}

/// The network's event packed as `code`, or `None` for every other kind (then
/// [`Event::unpack`] decodes it). The loop's dispatch: with the network's events first and
/// their variants in kind order, this is one comparison, where matching on the `Event` that
/// `unpack` built went through two jump tables (~10 instructions an event).
#[inline(always)]
pub(super) fn net_event(code: u32) -> Option<NetEvent> {
    let index = code & ((1 << INDEX_BITS) - 1);
    match code >> INDEX_BITS {
        NET_ARRIVE => Some(NetEvent::Arrive(index)),
        NET_PIPE_ARRIVE => Some(NetEvent::PipeArrive(index)),
        NET_ENQUEUE => Some(NetEvent::Enqueue(index)),
        _ => None,
    }
}

/// The link of a `PipeArrive` event packed as `code`, without decoding any other kind (the
/// loop's prefetch hint for the next event).
#[inline(always)]
pub(super) fn pipe_arrive_link(code: u32) -> Option<u32> {
    (code >> INDEX_BITS == NET_PIPE_ARRIVE).then_some(code & ((1 << INDEX_BITS) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_event() -> impl Strategy<Value = Event> {
        let i = 0u32..1 << INDEX_BITS;
        prop_oneof![
            i.clone().prop_map(|i| Event::Net(NetEvent::Arrive(i))),
            i.clone().prop_map(|i| Event::Net(NetEvent::PipeArrive(i))),
            i.clone().prop_map(|i| Event::Net(NetEvent::Enqueue(i))),
            i.clone().prop_map(Event::FlowStart),
            (i.clone(), any::<bool>(), any::<bool>()).prop_map(|(flow, client, request)| Event::Timer {
                flow,
                client,
                request
            }),
            i.clone().prop_map(Event::AppWakeup),
            Just(Event::Sample),
            i.clone().prop_map(Event::CrossSend),
            i.clone().prop_map(Event::Path),
            i.clone().prop_map(Event::PathEnd),
            i.prop_map(Event::HostRx),
        ]
    }

    proptest! {
        #[test]
        fn every_event_comes_back_from_its_32_bits(e in any_event()) {
            prop_assert_eq!(Event::unpack(e.pack()), e);
        }

        #[test]
        fn the_network_events_are_decoded_as_unpack_does(e in any_event()) {
            let want = match e {
                Event::Net(ne) => Some(ne),
                _ => None,
            };
            prop_assert_eq!(net_event(e.pack()), want);
        }

        #[test]
        fn the_hint_reads_a_pipe_arrival_and_nothing_else(e in any_event()) {
            let want = match e {
                Event::Net(NetEvent::PipeArrive(l)) => Some(l),
                _ => None,
            };
            prop_assert_eq!(pipe_arrive_link(e.pack()), want);
        }
    }

    #[test]
    #[should_panic(expected = "does not fit 28 bits")]
    fn an_index_too_large_is_refused_not_truncated() {
        Event::FlowStart(1 << INDEX_BITS).pack();
    }
}
