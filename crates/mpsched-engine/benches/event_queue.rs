//! Cost of the event queue and of one link hop, the two things every simulated packet pays.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mpsched_engine::event::EventQueue;
use mpsched_engine::net::{LinkSpec, NetEvent, Network};
use mpsched_engine::rng::Rng;

fn queue_push_pop(c: &mut Criterion) {
    // A steady state with ~1000 pending events, as in a 100 Mbit/s x 40 ms bulk transfer.
    c.bench_function("event_queue push+pop at depth 1000", |b| {
        let mut q = EventQueue::new();
        let mut rng = Rng::stream(1, 1);
        for i in 0..1000u32 {
            q.push(u64::from(i) * 1000, i);
        }
        let mut now = 0;
        b.iter(|| {
            let (t, e) = q.pop().unwrap();
            now = t;
            q.push(now + 1_000_000 + rng.below(1000), black_box(e));
        })
    });
}

fn link_hop(c: &mut Criterion) {
    c.bench_function("one packet through one link (enqueue, TxDone, Arrive)", |b| {
        let mut net: Network<u64> = Network::new();
        let l = net.add_link(
            LinkSpec { queue_packets: Some(333), ..LinkSpec::plain(100_000_000, 20_000_000) },
            Rng::stream(0, 0),
        );
        let r = net.add_route(vec![l]);
        let mut q: EventQueue<NetEvent> = EventQueue::new();
        let mut now = 0u64;
        b.iter(|| {
            net.send(now, r, 1500, 7, &mut |t, e| q.push(t, e));
            while let Some((t, e)) = q.pop() {
                now = t;
                black_box(net.handle(now, e, &mut |t, e| q.push(t, e)));
            }
        })
    });
}

criterion_group!(benches, queue_push_pop, link_hop);
criterion_main!(benches);
