#!/bin/bash
# Which clock the running kernel's CUBIC keeps its hold and epoch in (docs/testbed.md,
# "Session 17: CUBIC's clock"). A cubic bulk transfer runs between two namespaces over a
# tbf-shaped veth; a bpftrace program on the tcp:tcp_probe tracepoint prints, for each ACK the
# sender receives, `tcp_sk->rcv_tstamp` (jiffies), `bictcp->last_time` and `epoch_start`, cwnd,
# `last_cwnd`, `cnt` and `tcp_mstamp` (µs). `last_time` equal to jiffy values means
# `bictcp_update` runs on `tcp_jiffies32` (its hold HZ/32 jiffies, its target once per jiffy);
# µs values would mean Eric Dumazet's 2024 "switch ca->last_time to usec resolution".
# Needs root, bpftrace (`apt-get install bpftrace`) and a kernel with BTF. Run it under the
# testbed's queue: flock /tmp/mpsched-testbed-queue.lock bash benches/probe_cubic_clock.sh
set -euo pipefail
SECONDS_SENT=${1:-4}
OUT=$(mktemp -d)
BPF_PID=
# On any exit, Ctrl-C included: nothing left running (the tracer, the receiver), no namespaces.
cleanup() {
  [ -n "$BPF_PID" ] && kill -INT "$BPF_PID" 2>/dev/null
  kill $(jobs -p) 2>/dev/null
  ip netns del cubA 2>/dev/null || true
  ip netns del cubB 2>/dev/null || true
  }
trap cleanup EXIT
trap 'exit 130' INT TERM
cat > "$OUT/ca.bt" <<'BT'
tracepoint:tcp:tcp_probe {
  $sk = (struct sock *)args->skaddr;
  $ca = (struct bictcp *)((struct inet_connection_sock *)$sk)->icsk_ca_priv;
  $tp = (struct tcp_sock *)$sk;
  if (args->dport == 5001) {
    printf("%u %u %u %u %u %u %llu\n", $tp->rcv_tstamp, $ca->last_time, $ca->epoch_start,
      $tp->snd_cwnd, $ca->last_cwnd, $ca->cnt, $tp->tcp_mstamp);
  }
}
BT
bpftrace "$OUT/ca.bt" > "$OUT/trace.txt" 2>/dev/null &
BPF_PID=$!
sleep 5  # bpftrace attaches in a few seconds
ip netns add cubA; ip netns add cubB
ip link add vcA netns cubA type veth peer name vcB netns cubB
ip -n cubA addr add 10.77.0.1/24 dev vcA; ip -n cubB addr add 10.77.0.2/24 dev vcB
for ns in cubA cubB; do ip -n $ns link set lo up; done
ip -n cubA link set vcA up; ip -n cubB link set vcB up
ip netns exec cubA tc qdisc add dev vcA root tbf rate 50mbit burst 16kb latency 200ms
ip netns exec cubB python3 -c "
import socket
s = socket.socket(); s.bind(('10.77.0.2', 5001)); s.listen(1)
c, _ = s.accept()
while c.recv(1 << 20): pass
" &
sleep 0.5
ip netns exec cubA python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b'cubic')
s.connect(('10.77.0.2', 5001))
end = time.time() + $SECONDS_SENT
while time.time() < end: s.sendall(b'x' * 65536)
s.close()
"
wait %2 2>/dev/null || true
sleep 0.5
kill -INT $BPF_PID; wait $BPF_PID || true
BPF_PID=
python3 - "$OUT/trace.txt" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.split() and l.split()[0].isdigit()]
jiffies = {r[0] for r in rows}
last_times = {r[1] for r in rows if r[1]}
stamps_us = [r[6] for r in rows]
print(f"{len(rows)} ACKs; jiffies {min(jiffies)}-{max(jiffies)}; tcp_mstamp {min(stamps_us)}-{max(stamps_us)} us")
print(f"last_time: {len(last_times)} values, {len(last_times & jiffies)} of them jiffies seen at an ACK")
print(f"epoch_start: {len({r[2] for r in rows if r[2]} & jiffies)} of {len({r[2] for r in rows if r[2]})} values are jiffies seen at an ACK")
PY
