"""A fixed receive buffer on the kernel testbed (`rcv_buf_autotuning = false`, issue 11, kern11).

The simulator's `rcv_buf` is the window the receive buffer allows: its advertised window never
offers more than `rcv_buf` bytes of payload beyond DATA_ACK / rcv_nxt. The kernel's window comes
from a buffer counted in memory (skb truesize), so the value given to SO_RCVBUF is chosen so that
Linux 6.18's window for it is `rcv_buf`:

- `__sock_set_rcvbuf` (net/core/sock.c): `sk_rcvbuf = max(2 val, SOCK_MIN_RCVBUF)` and
  `SOCK_RCVBUF_LOCK` (autotuning off: `tcp_rcv_space_adjust`, `mptcp_rcv_space_adjust`).
  SO_RCVBUFFORCE (root) skips the `net.core.rmem_max` cap, a global the testbed leaves alone.
- `__tcp_win_from_space(ratio, space) = space x ratio / 256` (include/net/tcp.h,
  TCP_RMEM_TO_WIN_SCALE 8); `tcp_full_space` = that of `sk_rcvbuf`.
- Before the first data, the ratio is TCP_DEFAULT_SCALING_RATIO (128: half the buffer), so
  `tcp_select_initial_window` (net/ipv4/tcp_output.c) offers `val` (rounded down to whole
  segments; all of it since v6.10) and `tcp_init_buffer_space` starts `rcv_ssthresh` and
  `window_clamp` one advmss below it.
- The first full-size skb measures `scaling_ratio = len x 256 / truesize`
  (`tcp_measure_rcv_mss`, net/ipv4/tcp_input.c) and raises `window_clamp` to
  `tcp_win_from_space(sk_rcvbuf)` (`tcp_set_window_clamp`, "tcp: Update window clamping
  condition" and its 2025 fix); `tcp_grow_window` then grows `rcv_ssthresh` to it, 2 segments per
  segment received. MPTCP (net/mptcp/): `mptcp_setsockopt_sol_socket` copies the msk's SO_RCVBUF
  and lock to every subflow, `mptcp_rcv_space_adjust` sets the msk's ratio to the lowest of its
  subflows' before it looks at the lock, and a subflow's window is `__mptcp_space(msk)` =
  `mptcp_win_from_space(msk, sk_rcvbuf - rmem)` (`mptcp_space`, subflow.c).

So the steady window is `2 val x ratio / 256`, and `val = ceil(rcv_buf x 128 / ratio)` makes it
`rcv_buf`. The testbed's ratio is 197 (1 448-byte segments on its veths: cap11 measured
`rcv_ssthresh` growing to 524 288 x 197 / 256 on both MPTCP subflows, docs/testbed.md). The window
then starts at `128/197` of `rcv_buf` (65 %) and reaches `rcv_buf` within the first round trip of
data, 2 segments per segment, faster than slow start needs it.

The window scale is fixed at the handshake from the buffer as it is then, so some `rcv_buf`
values lie above the cap `65535 << rcv_wscale` the kernel can ever offer (wscale.py, kbuf11):
the run goes on with the cap, and the plan says so in a note naming the cap and the nearest
values the kernel gives as asked (`window_cap_notes`). The simulator offers the same cap
(`fixed_buffer_window_cap_bytes`, crates/mpsched-proto/src/tcp/receiver/grow.rs), so both
engines run such a value alike.
"""

from __future__ import annotations

from typing import Any

from mpsched.engines.kernel import wscale
from mpsched.engines.kernel.errors import TestbedConfigError

#: Linux `TCP_DEFAULT_SCALING_RATIO`: payload per 256 bytes of buffer before any data arrived.
DEFAULT_SCALING_RATIO = 128
#: The testbed's measured `scaling_ratio` (full 1 448-byte segments on its veths, Linux 6.18).
TESTBED_SCALING_RATIO = 197
#: Smallest fixed window the testbed takes: two full segments (below it Linux's
#: SOCK_MIN_RCVBUF and the silly-window rules decide, which the simulator does not model).
MIN_FIXED_RCV_BUF_BYTES = 2 * 1448
#: Largest: a window scale of 14 (RFC 7323) reaches 65 535 << 14 bytes.
MAX_FIXED_RCV_BUF_BYTES = 65_535 << 14


def so_rcvbuf_bytes(rcv_buf_bytes: int, ratio: int = TESTBED_SCALING_RATIO) -> int:
    """The SO_RCVBUF value whose steady kernel window is `rcv_buf_bytes` (see the module doc)."""
    return -(-rcv_buf_bytes * DEFAULT_SCALING_RATIO // ratio)


def transport_so_rcvbuf(t: dict[str, Any], where: str) -> int:
    """SO_RCVBUF for the receiving socket of transport `t` (field path `where`); 0: autotune.

    A missing `rcv_buf_autotuning` is false, as in the simulator's core (one configuration, one
    network on both engines)."""
    auto = t.get("rcv_buf_autotuning", False)
    if not isinstance(auto, bool):
        raise TestbedConfigError(f"{where}.rcv_buf_autotuning", "must be true or false")
    if auto:
        return 0
    b = t.get("rcv_buf_bytes")
    if isinstance(b, bool) or not isinstance(b, int) or not MIN_FIXED_RCV_BUF_BYTES <= b <= MAX_FIXED_RCV_BUF_BYTES:
        raise TestbedConfigError(
            f"{where}.rcv_buf_bytes", f"a fixed receive buffer (rcv_buf_autotuning = false) on the kernel "
            f"must be {MIN_FIXED_RCV_BUF_BYTES} to {MAX_FIXED_RCV_BUF_BYTES} bytes (two segments to "
            f"the largest scaled window), got {b!r}; change rcv_buf or set rcv_buf_autotuning = true")
    return so_rcvbuf_bytes(b)


def listener_so_rcvbuf(upload_values: list[int]) -> int:
    """The server listener's SO_RCVBUF: the receiving side of every upload (0: autotune). The
    testbed has one listener, so all uploads must share it."""
    return one_listener_value(upload_values, "rcv_buf", "uploads")


def one_listener_value(values: list[int], field: str, flows: str) -> int:
    """The one value the server's listener can take for `flows` (0 when there are none): the testbed
    has one listener, so differing values are one error naming `transports[*].{field}_bytes`."""
    vals = set(values)
    if len(vals) > 1:
        raise TestbedConfigError(
            f"transports[*].{field}_bytes", f"{flows} on the testbed share the server's one listener, so their "
            f"transports need the same {field} and rcv_buf_autotuning; make them equal or use the simulator")
    return vals.pop() if vals else 0


def window_cap_notes(transports: list[dict[str, Any]]) -> list[str]:
    """One note per transport whose fixed `rcv_buf` the kernel cannot give: Linux fixes the window
    scale at the handshake from the locked buffer and caps every window at `65535 << scale`, so
    the window is that cap, on the kernel and in the simulator alike (kbuf11, wsc11)."""
    notes = []
    for i, t in enumerate(transports):
        b = t.get("rcv_buf_bytes")
        if t.get("rcv_buf_autotuning", False) or not isinstance(b, int) or wscale.honoured(b, so_rcvbuf_bytes):
            continue
        s = wscale.handshake_wscale(so_rcvbuf_bytes(b))
        below, above = wscale.honoured_neighbours(b, so_rcvbuf_bytes)
        notes.append(f"transports[{i}].rcv_buf_bytes: Linux cannot give a fixed window of {b} bytes: its SO_RCVBUF "
                     f"({so_rcvbuf_bytes(b)}) gets window scale {s} at the handshake, which caps the window at "
                     f"{wscale.window_cap_bytes(s)} bytes (engines/kernel/wscale.py); {below} or {above} bytes "
                     f"are windows it gives as asked; both engines run {b} with the cap; or set rcv_buf_autotuning = true")
    return notes
