"""The MPTCP receive buffer on the kernel testbed (issue 11, ofo11): reads the client log of
`benches/probe_hystart.py CELL --client --mem` (`ss -ntmiH -t -M` samples: the msk's and its
subflows' skmem, rcv_space, rcv_rtt) and prints per connection (key: the msk token)

- `growths`: every change of the msk's `sk_rcvbuf` (`rb`), with the subflows' `rb`, their
  `rcv_space` (the `newval` `mptcp_rcv_space_adjust` handed them) and `rcv_rtt`;
- `at`: the msk's `rb` [and `r`, kB] at fixed times from the connection's first sample;
- `ofo`: the msk's receive memory per byte held above its `rcv_nxt` (`r` / (the subflows'
  in-order `bytes_received` - the msk's `rcv_nxt` advance)), over samples with r > 30 kB: the
  truesize of the msk's out-of-order queue per payload byte (in-order bytes not yet read are
  in `r` too, so it is an upper bound).

    .venv/bin/python benches/msk_rcvbuf.py /tmp/ofo11/k1/equal_htb_1MiB_client.log [growths|at|ofo]
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict

SOCK = re.compile(r"^(tcp|mptcp)\s+\S+\s+\d+\s+\d+\s+\S+:(\d+)\s+\S+")
TIMES_MS = (80, 100, 120, 140, 160, 180, 200, 220, 250, 300)


def parse(path: str) -> dict[str, dict[int, list[dict]]]:
    """token -> sample time (ns) -> the sockets of that connection in the sample."""
    conns: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    lines = open(path).read().splitlines()
    t = 0
    for i, line in enumerate(lines):
        if line.startswith("@"):
            t = int(line.split()[1])
            continue
        m = SOCK.match(line)
        if not m or i + 1 >= len(lines):
            continue
        det = lines[i + 1]
        sk = re.search(r"skmem:\(r(\d+),rb(\d+)", det)
        tok = re.search(r"token:(?:[0-9a-f]+\(id:\d+\)/)?([0-9a-f]+)", det)
        if not (sk and tok):
            continue
        d = {"kind": m.group(1), "r": int(sk.group(1)), "rb": int(sk.group(2))}
        for key in ("bytes_received", "rcv_space", "rcv_rtt"):
            v = re.search(key + r":([\d.]+)", det)
            d[key] = float(v.group(1)) if v else None
        v = re.search(r"rcv_nxt:([0-9a-f]+)", det)
        d["rcv_nxt"] = int(v.group(1), 16) if v else None
        conns[tok.group(1)][t].append(d)
    return conns


def msk_samples(samples: dict[int, list[dict]]):
    """(t_ns, msk, subflows) for the samples where the msk has a rcv_nxt."""
    for t in sorted(samples):
        msk = [d for d in samples[t] if d["kind"] == "mptcp" and d["rcv_nxt"] is not None]
        if msk:
            yield t, msk[0], [d for d in samples[t] if d["kind"] == "tcp"]


def main() -> None:
    path, what = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "growths")
    ratios: list[float] = []
    for tok, samples in parse(path).items():
        rows = list(msk_samples(samples))
        if not rows:
            continue
        t0, rcv0 = min(samples), rows[0][1]["rcv_nxt"]
        if what == "growths":
            print("==", tok)
            last = None
            for t, m, sfs in rows:
                if m["rb"] != last:
                    print(f"  {(t - t0) / 1e6:7.1f} ms msk rb {m['rb']:8d}  subflows rb {[s['rb'] for s in sfs]} "
                          f"rcv_space {sorted({int(s['rcv_space'] or 0) for s in sfs})} rcv_rtt {[s['rcv_rtt'] for s in sfs]}")
                    last = m["rb"]
        elif what == "at":
            cells = []
            for at in TIMES_MS:
                before = [m for t, m, _ in rows if (t - t0) / 1e6 <= at]
                cells.append(f"{before[-1]['rb'] // 1000:5d}[{before[-1]['r'] // 1000:3d}]" if before else "    -")
            print(tok[:8], " ".join(cells))
        else:
            out = []
            for _, m, sfs in rows:
                held = sum(s["bytes_received"] or 0 for s in sfs) - (m["rcv_nxt"] - rcv0)
                if m["r"] > 30_000 and held > 20_000:
                    out.append(m["r"] / held)
            if out:
                ratios += out
                print(f"{tok[:8]} {len(out):3d} samples: r / held median {statistics.median(out):.3f} "
                      f"(min {min(out):.3f}, max {max(out):.3f})")
    if what == "at":
        print("msk rb [r] in kB at", TIMES_MS, "ms")
    if what == "ofo" and len(ratios) > 1:
        q = statistics.quantiles(ratios, n=10)
        print(f"all {len(ratios)}: median {statistics.median(ratios):.3f}, p10 {q[0]:.3f}, p90 {q[-1]:.3f}")


if __name__ == "__main__":
    main()
