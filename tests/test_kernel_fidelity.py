"""Judging a kernel run's timing against its host (engines/kernel/fidelity.py); no root needed."""

from __future__ import annotations

import struct

from mpsched.engines.kernel.fidelity import (
    HOST_SHARE_P99_LIMIT_NS, STEAL_SHARE_LIMIT, CpuTimes, CpuWakeHold, host_stall, host_summary,
)


def _stat(tmp_path, user, idle, steal):
    f = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    f.write_text(f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
    return CpuTimes.read(f)


def _queue(host_p99_ns, own_p99_ns=10_000, packets=100):
    late = {"mean": 1, "p50": 1, "p90": 1, "p99": 1, "p999": 1, "max": 1}
    return {"qnum": 1, "packets": packets, "lateness_ns": late,
            "host_lateness_ns": {**late, "p99": host_p99_ns, "max": 3 * host_p99_ns},
            "own_lateness_ns": {**late, "p99": own_p99_ns, "max": 2 * own_p99_ns}}


def test_steal_share_is_the_runs_stolen_ticks_over_all_its_ticks_guest_time_not_counted_twice(tmp_path):
    before = _stat(tmp_path, user=100, idle=800, steal=100)
    after = _stat(tmp_path, user=300, idle=1500, steal=200)
    assert (before.steal_ticks, before.total_ticks) == (100, 1000)  # guest (7) is inside user already
    summary = host_summary(before, after, None, cpus_held_awake=True)
    assert summary == {"cpus_held_awake": True, "steal_share": 100 / 1000,
                       "stall": "the hypervisor took 10.0 % of the CPU time (limit 2 %)"}


def test_an_unreadable_stat_gives_no_steal_figure_rather_than_an_error(tmp_path):
    assert CpuTimes.read(tmp_path / "absent") is None
    assert host_summary(None, None, None, cpus_held_awake=False) == {"cpus_held_awake": False, "stall": None}


def test_the_delayers_worst_queue_counts_and_idle_queues_do_not():
    stats = {"queues": [_queue(50_000), _queue(400_000, own_p99_ns=30_000), _queue(9_000_000, packets=0)]}
    summary = host_summary(None, None, stats, cpus_held_awake=True)
    assert summary["delayer_host_p99_ns"] == 400_000 and summary["delayer_host_max_ns"] == 1_200_000
    assert summary["delayer_own_p99_ns"] == 30_000


def test_a_run_the_host_kept_on_time_is_not_called_stalled():
    host = host_summary(None, None, {"queues": [_queue(HOST_SHARE_P99_LIMIT_NS)]}, True)
    assert host["stall"] is None
    host["steal_share"] = STEAL_SHARE_LIMIT
    assert host_stall(host) is None
    assert host_stall({}) is None  # no figures: nothing to judge by


def test_a_stalled_run_names_each_figure_over_its_limit():
    host = host_summary(None, None, {"queues": [_queue(6_290_000)]}, True)
    said = host["stall"]
    assert "p99 6.29 ms" in said and "largest 18.9 ms" in said and "hypervisor" not in said
    host["steal_share"] = 0.19
    said = host_stall(host)
    assert "p99 6.29 ms" in said and "19.0 % of the CPU time" in said


def test_the_wake_hold_writes_a_zero_latency_request_and_keeps_it_until_released(tmp_path):
    device = tmp_path / "cpu_dma_latency"
    device.write_bytes(b"")
    hold = CpuWakeHold(device)
    assert hold.acquire() and hold.held
    assert hold.acquire()  # a second acquire keeps the one request
    assert device.read_bytes() == struct.pack("i", 0)
    hold.release()
    assert not hold.held
    hold.release()  # releasing twice is harmless


def test_without_the_device_the_hold_says_why_and_the_run_goes_on(tmp_path):
    hold = CpuWakeHold(tmp_path / "absent")
    assert not hold.acquire() and not hold.held
    assert "absent" in hold.reason_not_held and "No such file" in hold.reason_not_held
