// htsim side of the side-by-side end-to-end benchmark (our side: crates/mpsched-sim/benches/e2e.rs).
//
// Builds, with htsim's own classes (TcpSrc, TcpSink, Queue, Pipe, Route, EventList), the
// dumbbell of e2e.rs: 100 Mbit/s, 20 ms one-way in each direction, a drop-tail queue of
// 333 packets (333 * 1500 bytes, htsim queues count bytes) at the head of each direction,
// 1500-byte packets; and runs
//   (1) one 100 MB bulk TCP transfer, until it completes,
//   (2) 1000 flows of 64 KB with Poisson arrivals (mean gap 50 ms),
//   (3) 10 000 such flows,
// each repetition in a fresh child process (htsim's EventList is a process-wide singleton),
// timing setup + run with the wall clock and CLOCK_PROCESS_CPUTIME_ID.
//
// Packets counted = every packet an endpoint emits (data incl. SYN and retransmissions, and
// ACKs): the first hop of every route is a counting PacketSink that only forwards, so the
// count needs no change to htsim. See README.md for what each setting is and why.
//
// Usage: htsim_e2e [--reps=N] [--ssthresh-pkts=N] [--scan-ms=N] [scenario-substring]

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

#include "eth_pause_packet.h"
#include "eventlist.h"
#include "loggertypes.h"
#include "ndppacket.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "tcp.h"
#include "tcppacket.h"

// ---- Link-only definitions -------------------------------------------------------------
// These htsim statics live in library files this build leaves out (loggers.cpp pulls in
// every protocol; the *packet.cpp files only hold packet pools; fairpullqueue.cpp, which
// queue.o needs, instantiates pull queues of NDP packets). Same
// behaviour as htsim's: every Logged object is recorded in the manager's vector.
LoggedManager::LoggedManager() {}
void LoggedManager::add_logged(Logged* logged) { _idmap.push_back(logged); }
void LoggedManager::dump_idmap() {}
LoggedManager Logged::_logged_manager;
PacketDB<TcpPacket> TcpPacket::_packetdb;
PacketDB<TcpAck> TcpAck::_packetdb;
PacketDB<EthPausePacket> EthPausePacket::_packetdb;
PacketDB<NdpPull> NdpPull::_packetdb;
PacketDB<NdpRTS> NdpRTS::_packetdb;

// ---- Benchmark parts (our code, on htsim's public API) ---------------------------------

static const int kPacketBytes = 1500;        // htsim's default data packet size (network.cpp)
static const uint64_t kRateBps = 100000000;  // 100 Mbit/s
static const double kOneWayMs = 20.0;
static const int kQueuePackets = 333;

// First hop of a route: counts the packets an endpoint emits, then forwards them.
class CountingHop : public PacketSink {
 public:
    explicit CountingHop(const string& name) : _name(name) {}
    void receivePacket(Packet& pkt) override {
        count++;
        pkt.sendOn();
    }
    const string& nodename() override { return _name; }
    uint64_t count = 0;

 private:
    string _name;
};

class BenchSrc;

// htsim's TcpRtxTimerScanner calls rtx_timer_hook on every TCP ever registered, every scan
// period, forever; with 10 000 short flows that scan (not TCP) would dominate the run. This one
// has the same per-flow effect but only walks flows that have started and not finished, and
// stops ticking when there are none.
class ActiveRtxScanner : public EventSource {
 public:
    ActiveRtxScanner(simtime_picosec period, EventList& ev) : EventSource(ev, "ActiveRtxScanner"), _period(period) {}
    void add(BenchSrc* src);
    void doNextEvent() override;

 private:
    simtime_picosec _period;
    std::vector<BenchSrc*> _active;
    bool _ticking = false;
};

struct RunStats {
    uint64_t flows_done = 0;
    simtime_picosec first_fct_ps = 0;  // flow 0's completion time (the bulk transfer's)
    simtime_picosec end_ps = 0;        // last completion
};

// A TCP source that knows its flow size in packets, when it started and when the final ACK
// arrived. Flow completion = the ACK covering the last data byte reaches the sender.
class BenchSrc : public TcpSrc {
 public:
    BenchSrc(EventList& ev, uint64_t flow_bytes, ActiveRtxScanner* scanner, RunStats* stats)
        : TcpSrc(nullptr, nullptr, ev), _scanner(scanner), _stats(stats) {
        // htsim numbers bytes from 1 (SYN = 1); data packet k covers [2+(k-1)mss, 1+k*mss].
        // send_packets() sends while _highest_sent <= _flow_size + 1, so _flow_size = bytes - 1
        // sends exactly ceil(bytes / mss) full packets. (set_flowsize(x) would set x + mss, one
        // packet more, and print a line per flow.)
        uint64_t pkts = (flow_bytes + _mss - 1) / _mss;
        _flow_size = flow_bytes - 1;
        _final_ack = 1 + pkts * _mss;
    }
    void doNextEvent() override {
        if (!_started) {  // the first event is the flow start scheduled by connect()
            _started = true;
            _start_ps = eventlist().now();
            _scanner->add(this);
        }
        TcpSrc::doNextEvent();
    }
    void receivePacket(Packet& pkt) override {
        TcpSrc::receivePacket(pkt);
        if (!_done && _last_acked >= _final_ack) {
            _done = true;
            simtime_picosec now = eventlist().now();
            if (_first) _stats->first_fct_ps = now - _start_ps;
            _stats->flows_done++;
            _stats->end_ps = std::max(_stats->end_ps, now);
        }
    }
    bool done() const { return _done; }
    bool _first = false;

 private:
    ActiveRtxScanner* _scanner;
    RunStats* _stats;
    uint64_t _final_ack;
    bool _started = false, _done = false;
    simtime_picosec _start_ps = 0;
};

void ActiveRtxScanner::add(BenchSrc* src) {
    _active.push_back(src);
    if (!_ticking) {
        _ticking = true;
        eventlist().sourceIsPendingRel(*this, _period);
    }
}

void ActiveRtxScanner::doNextEvent() {
    simtime_picosec now = eventlist().now();
    size_t keep = 0;
    for (BenchSrc* src : _active) {
        if (src->done()) continue;
        src->rtx_timer_hook(now, _period);
        _active[keep++] = src;
    }
    _active.resize(keep);
    _ticking = !_active.empty();
    if (_ticking) eventlist().sourceIsPendingRel(*this, _period);
}

struct Options {
    int reps = 5;
    // Initial ssthresh: -1 keeps htsim's (TcpSrc sets 100 packets); 0 = "arbitrarily high"
    // (RFC 5681 §3.1); N = N packets.
    long long ssthresh_pkts = -1;
    double scan_ms = 10.0;
    std::string only;
};

struct Scenario {
    const char* name;
    std::vector<double> starts_s;  // one entry per flow
    uint64_t flow_bytes;
};

// What a child process reports back for one repetition.
struct RepResult {
    double wall_s, cpu_s;
    uint64_t events, data_pkts, ack_pkts, flows, flows_done, drops;
    double first_fct_s, end_s;
};

static double cpu_now_s() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static RepResult run_once(const Scenario& sc, const Options& opt) {
    double wall0 = wall_now_s(), cpu0 = cpu_now_s();
    EventList& ev = EventList::getTheEventList();
    mem_b queue_bytes = (mem_b)kQueuePackets * kPacketBytes;
    Queue qfwd(kRateBps, queue_bytes, ev, nullptr), qrev(kRateBps, queue_bytes, ev, nullptr);
    Pipe pfwd(timeFromMs(kOneWayMs), ev), prev(timeFromMs(kOneWayMs), ev);
    CountingHop data_hop("data-counter"), ack_hop("ack-counter");
    ActiveRtxScanner scanner(timeFromMs(opt.scan_ms), ev);
    RunStats stats;

    // Flows, routes and sinks live until the child exits.
    for (size_t i = 0; i < sc.starts_s.size(); i++) {
        BenchSrc* src = new BenchSrc(ev, sc.flow_bytes, &scanner, &stats);
        src->_first = (i == 0);
        if (opt.ssthresh_pkts == 0)
            src->set_ssthresh(0xffffffffu);
        else if (opt.ssthresh_pkts > 0)
            src->set_ssthresh((uint64_t)opt.ssthresh_pkts * src->_mss);
        TcpSink* sink = new TcpSink();
        Route* out = new Route();
        out->push_back(&data_hop);
        out->push_back(&qfwd);
        out->push_back(&pfwd);
        out->push_back(sink);
        Route* back = new Route();
        back->push_back(&ack_hop);
        back->push_back(&qrev);
        back->push_back(&prev);
        back->push_back(src);
        src->connect(*out, *back, *sink, timeFromSec(sc.starts_s[i]));
    }
    uint64_t events = 0;
    while (EventList::doNextEvent()) events++;
    RepResult r;
    r.cpu_s = cpu_now_s() - cpu0;
    r.wall_s = wall_now_s() - wall0;
    r.events = events;
    r.data_pkts = data_hop.count;
    r.ack_pkts = ack_hop.count;
    r.flows = sc.starts_s.size();
    r.flows_done = stats.flows_done;
    r.drops = qfwd.num_drops() + qrev.num_drops();
    r.first_fct_s = timeAsSec(stats.first_fct_ps);
    r.end_s = timeAsSec(stats.end_ps);
    return r;
}

// Runs one repetition in a forked child so every repetition starts from a fresh EventList,
// packet pools and allocator, as each of our runs builds a fresh simulator.
static bool run_in_child(const Scenario& sc, const Options& opt, RepResult* out) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        close(fds[0]);
        // htsim prints flow events on cout ("Flow ... finished at"); keep them off our table.
        std::cout.rdbuf(nullptr);
        RepResult r = run_once(sc, opt);
        ssize_t w = write(fds[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, sizeof *out);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static std::vector<double> poisson_starts(size_t n, double mean_gap_s) {
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> gap(1.0 / mean_gap_s);
    std::vector<double> t(n);
    double now = 0;
    for (size_t i = 0; i < n; i++) {
        now += gap(rng);
        t[i] = now;
    }
    return t;
}

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strncmp(a, "--reps=", 7)) opt.reps = std::max(1, atoi(a + 7));
        else if (!strncmp(a, "--ssthresh-pkts=", 16)) opt.ssthresh_pkts = atoll(a + 16);
        else if (!strncmp(a, "--scan-ms=", 10)) opt.scan_ms = atof(a + 10);
        else if (a[0] != '-') opt.only = a;
        else {
            fprintf(stderr, "usage: %s [--reps=N] [--ssthresh-pkts=N] [--scan-ms=N] [scenario]\n", argv[0]);
            return 2;
        }
    }
    std::vector<Scenario> scenarios = {
        {"(1) bulk 100 MB", {0.0}, 100000000},
        {"(2) 1000 x 64 KB Poisson 50 ms", poisson_starts(1000, 0.050), 64000},
        {"(3) 10000 x 64 KB Poisson 50 ms", poisson_starts(10000, 0.050), 64000},
    };
    std::string ssthresh = opt.ssthresh_pkts < 0    ? "htsim default (100 packets)"
                           : opt.ssthresh_pkts == 0 ? "unlimited"
                                                    : std::to_string(opt.ssthresh_pkts) + " packets";
    printf("htsim TCP (NewReno), %d-byte packets, initial cwnd 10, initial ssthresh %s, RTO scan %.0f ms\n\n",
           kPacketBytes, ssthresh.c_str(), opt.scan_ms);
    printf("| scenario | CPU s, median of %d (best) | wall s, median (best) | data pkts | ack pkts | packets |"
           " M packets/s (CPU, median) | ns/packet (CPU) | M events/s (CPU) | drops | flows done | FCT flow 0 s | last done s |\n",
           opt.reps);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (const Scenario& sc : scenarios) {
        if (!opt.only.empty() && std::string(sc.name).find(opt.only) == std::string::npos) continue;
        std::vector<double> cpus, walls;
        RepResult last{};
        for (int rep = 0; rep < opt.reps; rep++) {
            if (!run_in_child(sc, opt, &last)) {
                fprintf(stderr, "%s: repetition %d failed\n", sc.name, rep);
                return 1;
            }
            cpus.push_back(last.cpu_s);
            walls.push_back(last.wall_s);
        }
        double cpu = median(cpus), wall = median(walls);
        uint64_t pkts = last.data_pkts + last.ack_pkts;
        printf("| %s | %.3f (%.3f) | %.3f (%.3f) | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.2f | %.0f | %.2f | %" PRIu64
               " | %" PRIu64 "/%" PRIu64 " | %.3f | %.3f |\n",
               sc.name, cpu, *std::min_element(cpus.begin(), cpus.end()), wall,
               *std::min_element(walls.begin(), walls.end()), last.data_pkts, last.ack_pkts, pkts, pkts / cpu / 1e6,
               cpu * 1e9 / pkts, last.events / cpu / 1e6, last.drops, last.flows_done, last.flows, last.first_fct_s, last.end_s);
        fflush(stdout);
    }
    return 0;
}
