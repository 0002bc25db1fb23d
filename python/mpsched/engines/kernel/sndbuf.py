"""A fixed send buffer on the kernel testbed (`rcv_buf_autotuning = false`, issue 11, kern11b).

In the simulator `rcv_buf_autotuning = false` fixes both buffers (crates/mpsched-sim endpoint.rs:
`snd_buf_autotuning: t.rcv_buf_autotuning`): the application writes while the bytes it wrote and
the peer has not DATA_ACKed stay below `snd_buf` (payload bytes, mptcp/sender.rs). The kernel's
sender autotunes unless the sending socket has SOCK_SNDBUF_LOCK, and counts memory, so the value
given to SO_SNDBUF is chosen so that Linux 6.18's limit on the connection is `snd_buf` of payload:

- `sk_setsockopt` SO_SNDBUF(FORCE) (net/core/sock.c): `sk_sndbuf = max(2 val, SOCK_MIN_SNDBUF)`
  and SOCK_SNDBUF_LOCK; FORCE (root) skips the global `net.core.wmem_max`. The lock stops
  `tcp_sndbuf_expand` (`tcp_should_expand_sndbuf`) and `__mptcp_sync_sndbuf`, which otherwise
  sets the MPTCP socket's buffer to `tcp_wmem[0]` plus its subflows' autotuned buffers.
- MPTCP (net/mptcp/): `mptcp_setsockopt_sol_socket` copies the msk's sk_sndbuf and lock to every
  subflow (`sync_socket_options`, also on joins), a listener's accepted sockets inherit both.
  `mptcp_sendmsg` charges the msk `sk_wmem_queued` with the payload plus, per data frag, the
  `struct mptcp_data_frag` header (40 bytes, `dfrag->overhead`) carved at the start of the frag;
  frags collapse while the writes are contiguous in one 32 KiB page frag (SKB_FRAG_PAGE_ORDER; one
  server thread per connection in mpxfer, so one header per page). It carves a new frag only
  while `sk_stream_memory_free` (`sk_wmem_queued < sk_sndbuf`); `__mptcp_clean_una` uncharges
  what the peer DATA_ACKed. So the writer stops once payload + headers reach `2 val`.

So `val = ceil((snd_buf + 40 x frags) / 2)` with `frags = ceil(snd_buf / (32 768 - 40))`. The
kernel differs from the simulator's exact limit in two ways it shares with autotuning (measured,
docs/testbed.md "Session 7: a fixed send buffer on the kernel"): a write that started a frag fills
it (up to one page frag over the limit), and a polling writer is woken only once a third of the
buffer is free (`sk_stream_is_writeable`). A subflow counts its skbs' truesize against the same
`2 val`; it was not the tighter limit in the measurements (a subflow's peak above it, as its
check comes after a whole frag). Plain TCP (`tcp_sendmsg`, also a plain TCP client of the
server's MPTCP listener) gets the same value, but `tcp_sendmsg_locked` checks the buffer only
when it starts a new skb, so each of mpxfer's 256 KiB writes goes in whole: up to 2/3 `sk_sndbuf`
+ 256 KiB of payload in flight, and no SO_SNDBUF gives a limit of `snd_buf` below that; with a
binding fixed send buffer plain TCP does not agree with the simulator (docs/testbed.md, kern11c).
"""

from __future__ import annotations

from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError
from mpsched.engines.kernel.rcvbuf import one_listener_value

#: `sizeof(struct mptcp_data_frag)` on 64-bit Linux 6.18 (net/mptcp/protocol.h): list_head 16,
#: data_seq 8, data_len/offset/overhead/eor/already_sent 8, page 8.
DFRAG_HEADER_BYTES = 40
#: `mptcp_sendmsg`'s page frags: 32 KiB (SKB_FRAG_PAGE_ORDER), one dfrag header each.
PAGE_FRAG_BYTES = 32_768
#: SOCK_MIN_SNDBUF on the testbed (2 x (2 048 + 256), include/net/sock.h): below it Linux raises
#: the buffer and the limit would not be `snd_buf`.
MIN_FIXED_SND_BUF_BYTES = 4_608
#: `sk_setsockopt` caps `val` at INT_MAX / 2 so that `2 val` fits an int.
MAX_SO_SNDBUF = (2**31 - 1) // 2


def so_sndbuf_bytes(snd_buf_bytes: int) -> int:
    """The SO_SNDBUF value whose kernel limit is `snd_buf_bytes` of payload (see the module doc)."""
    frags = -(-snd_buf_bytes // (PAGE_FRAG_BYTES - DFRAG_HEADER_BYTES))
    return -(-(snd_buf_bytes + DFRAG_HEADER_BYTES * frags) // 2)


def transport_so_sndbuf(t: dict[str, Any], where: str) -> int:
    """SO_SNDBUF for the sending socket of transport `t` (field path `where`); 0: autotune.

    `rcv_buf_autotuning` switches both buffers, as in the simulator (missing: false)."""
    if t.get("rcv_buf_autotuning", False):  # its type is checked by rcvbuf.transport_so_rcvbuf
        return 0
    b = t.get("snd_buf_bytes")
    if (isinstance(b, bool) or not isinstance(b, int) or b < MIN_FIXED_SND_BUF_BYTES
            or so_sndbuf_bytes(b) > MAX_SO_SNDBUF):
        raise TestbedConfigError(
            f"{where}.snd_buf_bytes", f"a fixed send buffer (rcv_buf_autotuning = false) on the kernel must be "
            f"{MIN_FIXED_SND_BUF_BYTES} bytes (Linux's SOCK_MIN_SNDBUF) to about 2 GiB, got {b!r}; change "
            f"snd_buf or set rcv_buf_autotuning = true")
    return so_sndbuf_bytes(b)


def listener_so_sndbuf(download_values: list[int]) -> int:
    """The server listener's SO_SNDBUF: the sending side of every download and RPC response (0:
    autotune). The testbed has one listener, so all of them must share it."""
    return one_listener_value(download_values, "snd_buf", "downloads and RPC flows")
