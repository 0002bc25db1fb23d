"""kbuf11: the window scale and the largest offered window Linux gives a locked SO_RCVBUF.

Not the testbed: one throwaway namespace, loopback only (its 64 KiB MTU makes the skb ratio, so
the steady window, differ from the veths'; the scale and the cap do not depend on it). Root:
    flock /tmp/mpsched-testbed-queue.lock python3 benches/probe_wscale.py 64975 65536 4087850 4194304
For each SO_RCVBUF value (SO_RCVBUFFORCE, on the connecting socket, TCP then MPTCP) the server
sends for 1.5 s while the client reads; prints the client's rcv_wscale (ss `wscale:snd,rcv`) and
the largest snd_wnd the server saw, i.e. the largest window the client offered.
"""
import os
import re
import socket
import subprocess
import sys
import threading
import time

IPPROTO_MPTCP = 262
SO_RCVBUFFORCE = 33
NS = "kbuf11probe"


def one(val, port, proto):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port)); srv.listen(1)
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    cli.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, val)
    got = cli.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    cli.connect(("127.0.0.1", port)); conn, _ = srv.accept()
    stop = time.time() + 1.5
    def send():
        buf = b"x" * 65536
        while time.time() < stop:
            conn.send(buf)
    def recv():
        try:
            while cli.recv(1 << 16):
                pass
        except OSError:  # the socket closed under us at the end
            pass
    ts = threading.Thread(target=send); tr = threading.Thread(target=recv, daemon=True); ts.start(); tr.start()
    wscales, wnds = set(), []
    while ts.is_alive():
        out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True).stdout
        # the server side's snd_wnd is the client's offered window; the client's line shows wscale:snd,rcv
        for block in re.split(r"\n(?=\S)", out):
            if f"127.0.0.1:{port} " in block.split("\n")[0].split()[-1] + " ":  # peer is the server: client socket
                m = re.search(r"wscale:(\d+),(\d+)", block)
                if m: wscales.add(int(m.group(2)))
            m = re.search(r"snd_wnd:(\d+)", block)
            if m and block.split("\n")[0].split()[-2].endswith(f":{port}"):  # local is the server
                wnds.append(int(m.group(1)))
        time.sleep(0.05)
    ts.join(); conn.close(); cli.close(); srv.close()
    return got, sorted(wscales), max(wnds) if wnds else None

def main() -> None:
    if os.environ.get("KBUF11_IN_NS") != "1":  # set up the namespace, then run again inside it
        subprocess.run(["ip", "netns", "add", NS], check=True)
        try:
            for cmd in (["ip", "link", "set", "lo", "up"],
                        ["sysctl", "-qw", "net.ipv4.tcp_rmem=4096 131072 67108864"],  # >= 2 x buffer, as network.py
                        ["sysctl", "-qw", "net.mptcp.enabled=1"]):
                subprocess.run(["ip", "netns", "exec", NS, *cmd], check=True)
            subprocess.run(["ip", "netns", "exec", NS, "env", "KBUF11_IN_NS=1", sys.executable, *sys.argv], check=True)
        finally:
            subprocess.run(["ip", "netns", "del", NS], check=True)
        return
    for i, a in enumerate(sys.argv[1:]):
        for proto, name in ((0, "tcp"), (IPPROTO_MPTCP, "mptcp")):
            got, ws, wmax = one(int(a), 40000 + 2 * i + (proto != 0), proto)
            print(f"{name} SO_RCVBUF={a} sk_rcvbuf={got} rcv_wscale={ws} max_offered_window={wmax}", flush=True)


if __name__ == "__main__":
    main()
