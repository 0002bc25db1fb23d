#!/usr/bin/env bash
# Builds htsim's own FatTree MPTCP driver (sim/datacenter/main_tcp.cpp; FAT_TREE is defined by
# fat_tree_topology.h's include guard, so the FatTree branch is the default one) at the
# load of our scale bench's "FatTree k=N MPTCP" rows, to see how htsim's time per packet-hop
# grows with k (issue 17; see README.md here, "FatTree scaling").
#
#   benches/htsim/fattree_build.sh /path/to/csg-htsim/sim [build-dir]
#   BUILD/sim/datacenter/htsim_tcp -nodes 1024 -conns 1024 -sub 8 -o /dev/null   # k=16
#
# The htsim copy given is not modified: it is copied to build-dir (default
# /tmp/htsim-fattree-build) and the copy is patched, then built with htsim's own Makefiles
# (library -O3, datacenter -O2, as shipped). The patches (python3 below) change only:
#   - main_tcp.cpp's setup to our rows': 100 Mbit/s links (HOST_NIC is 100 Gbit/s), 100-packet
#     queues (memFromPkt(8)), 20 us per link (the 9-argument FatTreeTopology constructor; the
#     default is 1 us), 1 s simulated (4 s; HTSIM_END_MS=N: N ms, e.g. 1 to count what building
#     the topology costs under valgrind), no per-queue sampling logger (it adds an event per
#     queue every 1 ms), srand(1) instead of srand(time(NULL)) so a run repeats;
#   - a count of packet-hops: every link of htsim's FatTree is one Pipe, and Pipe::doNextEvent
#     delivers one packet per call, so a global counter incremented there counts hops;
#   - the event loop timed with CLOCK_PROCESS_CPUTIME_ID (building the topology and the paths
#     left out, as our scale bench leaves out building its configuration) and one line printed:
#     "htsim-fattree nodes=N hops=H events=E loop_cpu_s=S ns_per_hop=X".
# Queues stay htsim's RANDOM type (drop-tail with a 3-packet random-drop band, what main_tcp.cpp
# uses), MPTCP is COUPLED_EPSILON with epsilon 1 (LIA), each subflow picks one of the pair's
# paths at random (rand() % paths), permutation traffic, all flows long-lived from time 0.
set -euo pipefail

SIM=$(cd "${1:?usage: fattree_build.sh /path/to/csg-htsim/sim [build-dir]}" && pwd)
OUT=${2:-/tmp/htsim-fattree-build}
mkdir -p "$OUT"
rm -rf "$OUT/sim"
cp -a "$SIM" "$OUT/sim"
cd "$OUT/sim"

python3 - <<'PY'
import re

def patch(path, old, new, count=1):
    text = open(path).read()
    if text.count(old) != count:
        raise SystemExit(f"{path}: expected {count} of {old!r}, found {text.count(old)}")
    open(path, "w").write(text.replace(old, new))

patch("pipe.cpp", '#include "pipe.h"\n', '#include "pipe.h"\nuint64_t htsim_pipe_departs = 0;\n')
patch("pipe.cpp", "    pkt->sendOn();\n", "    htsim_pipe_departs++;\n    pkt->sendOn();\n")

m = "datacenter/main_tcp.cpp"
patch(m, '#include "config.h"\n', '#include "config.h"\n#include <time.h>\nextern uint64_t htsim_pipe_departs;\n')
patch(m, "eventlist.setEndtime(timeFromSec(4));",
      'eventlist.setEndtime(timeFromMs(getenv("HTSIM_END_MS") ? atoi(getenv("HTSIM_END_MS")) : 1000));')
patch(m, "speedFromMbps((double)HOST_NIC)", "speedFromMbps((double)100)")
patch(m, "srand(time(NULL));", "srand(1);")
patch(m, "new FatTreeTopology(no_of_nodes, linkspeed, memFromPkt(8), &qlf, &eventlist,ff,RANDOM,0);",
      "new FatTreeTopology(no_of_nodes, linkspeed, memFromPkt(100), NULL, &eventlist, ff, RANDOM, timeFromUs(20.0), 0);")
patch(m, "    while (eventlist.doNextEvent()) {\n    }\n",
      """    struct timespec t0, t1;
    uint64_t events = 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    while (eventlist.doNextEvent()) {
        events++;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("htsim-fattree nodes=%u hops=%llu events=%llu loop_cpu_s=%.3f ns_per_hop=%.1f\\n",
           no_of_nodes, (unsigned long long)htsim_pipe_departs, (unsigned long long)events,
           secs, secs * 1e9 / (double)htsim_pipe_departs);
""")
PY

make -j2 libhtsim.a >"$OUT/build-lib.log" 2>&1
make -C datacenter htsim_tcp CFLAGS="-Wall -std=c++11 -g -Wsign-compare -O2" >"$OUT/build-tcp.log" 2>&1
echo "built $OUT/sim/datacenter/htsim_tcp" >&2
