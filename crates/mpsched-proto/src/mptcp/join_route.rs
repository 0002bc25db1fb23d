//! A join created while its interface has no route (Linux 6.18, upstream MPTCP).
//!
//! When a client interface goes down the kernel deletes its routes (`fib_sync_down_dev`) but
//! neither TCP nor the in-kernel path manager is told (`pm_kernel.c` registers no netdevice
//! notifier), so established subflows carry on as through a blackhole. A join the path manager
//! creates meanwhile (`mptcp_pm_create_subflow_or_signal_addr` -> `__mptcp_subflow_connect`)
//! fails in `kernel_connect()` at the route lookup (`ip_route_connect`: -ENETUNREACH), so no
//! SYN leaves; `mptcp_pm_close_subflow` gives back the subflow count, but the endpoint's id
//! was already taken from `msk->pm.id_avail_bitmap` and `local_addr_used` counted, so
//! `select_local_address` never offers that endpoint to this connection again: the join is
//! not retried, even when the interface returns (a user-space path manager such as mptcpd
//! would have to add it). A join whose SYNs go unanswered ends the same way once it gives up
//! (`tcp_write_timeout`, see `crate::tcp::handshake`): `mptcp_pm_subflow_check_next` only
//! asks for the next endpoint, and there is none.

/// Sets (`up` false) or clears subflow `sf`'s bit in `route_down`.
pub(crate) fn set(route_down: &mut u64, sf: usize, up: bool) {
    let bit = 1u64 << sf.min(63);
    if up {
        *route_down &= !bit;
    } else {
        *route_down |= bit;
    }
}
