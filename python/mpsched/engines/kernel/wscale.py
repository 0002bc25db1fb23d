"""Which fixed receive windows Linux 6.18 can give: the window scale of a locked buffer (kbuf11).

rcvbuf.py sets `SO_RCVBUF = val = ceil(rcv_buf x 128 / 197)` so that the steady window
`2 val x 197 / 256` is `rcv_buf`. But the window scale is chosen once, at the handshake, from
the buffer as it is then (net/ipv4/tcp_output.c):

- `tcp_connect_init` (client) and `tcp_openreq_init_rwin` (server, net/ipv4/tcp_minisocks.c):
  with `SOCK_RCVBUF_LOCK`, `window_clamp = tcp_full_space(sk)`, i.e. `tcp_win_from_space` of
  `sk_rcvbuf = 2 val` at the ratio of a socket that has seen no data,
  TCP_DEFAULT_SCALING_RATIO = 128: `2 val x 128 >> 8 = val`.
- `tcp_select_initial_window`: `space = min(max(space, tcp_rmem[2], rmem_max), window_clamp)`
  = `val` (the testbed's tcp_rmem[2] is at least `2 x rcv_buf`, network.py `_sysctls`), and
  `rcv_wscale = clamp(ilog2(space) - 15, 0, 14)`.
- `tcp_select_window` caps every later offer at `65535 << rcv_wscale`. MPTCP subflows copy the
  msk's locked buffer (`mptcp_sockopt_sync_locked`), so every subflow gets the same scale
  (dc11b measured `wscale:7,0` on all four subflows for rcv_buf 100 KB).

With scale s (`2^(15+s) <= val < 2^(16+s)`) the cap is 1 to 2 times `val`, while the steady
window is `val x 197/128`, 1.54 times it. So in every scale's band the upper values are capped:
`rcv_buf` from `65536 << s` to about `2^(16+s) x 197/128` cannot be had, the next scale only
starts there. Scale 0: 65 535 < rcv_buf <= 100 862 (the kernel gives 65 535, dc11b); scale 6:
4 194 304 < rcv_buf <= 6 455 296, which holds the simulator's default fixed 6 MiB.

Tolerance: `__tcp_select_window` rounds every scaled offer up to a multiple of `1 << rcv_wscale`,
so the kernel's window is never finer than one unit of the window field. A `rcv_buf` at most one
unit above the cap (`rcv_buf <= 65536 << s`: every power of two from 128 KiB up, e.g. 16 MiB
gets 16 MiB - 256 bytes) is honoured to within that unit, like any other value.
"""

from __future__ import annotations

#: RFC 7323's largest window scale (Linux TCP_MAX_WSCALE).
MAX_WSCALE = 14


def handshake_wscale(so_rcvbuf: int) -> int:
    """`rcv_wscale` Linux picks for a socket whose SO_RCVBUF is `so_rcvbuf` and locked: the
    handshake's `tcp_full_space` is `so_rcvbuf` (doubled, times 128/256)."""
    return min(max(so_rcvbuf.bit_length() - 1 - 15, 0), MAX_WSCALE)


def window_cap_bytes(wscale: int) -> int:
    """The largest window `tcp_select_window` can offer with scale `wscale`."""
    return 65_535 << wscale


def honoured(rcv_buf_bytes: int, so_rcvbuf_of) -> bool:
    """Whether the kernel's window for `rcv_buf_bytes` (through `so_rcvbuf_of`, rcvbuf.py) is
    `rcv_buf_bytes` to within one unit of the window field (module doc)."""
    s = handshake_wscale(so_rcvbuf_of(rcv_buf_bytes))
    return rcv_buf_bytes <= window_cap_bytes(s) + (1 << s)


def honoured_neighbours(rcv_buf_bytes: int, so_rcvbuf_of) -> tuple[int, int]:
    """For a refused `rcv_buf_bytes`: the largest honoured value below it and the smallest above.

    Below: the top of its own scale's range, `65536 << s`. Above: the first value whose SO_RCVBUF
    reaches the next scale (`val >= 2^(16+s)`), which the cap `65535 << (s+1)` covers."""
    s = handshake_wscale(so_rcvbuf_of(rcv_buf_bytes))
    below = 65_536 << s
    lo, hi = rcv_buf_bytes, rcv_buf_bytes
    while handshake_wscale(so_rcvbuf_of(hi)) <= s:  # so_rcvbuf_of is monotone: bisect the edge
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if handshake_wscale(so_rcvbuf_of(mid)) <= s:
            lo = mid
        else:
            hi = mid
    return below, hi
