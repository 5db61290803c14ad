# SPDX-License-Identifier: MIT
"""Slow HTTP clients (slowloris) against a server on loopback.

usage: slow_clients.py HOST PORT SECONDS CONNECTIONS ADDRESSES

Holds CONNECTIONS connections to HOST:PORT for SECONDS, each from one of
ADDRESSES source addresses (127.0.0.2 onwards, round robin), each sending
a request line and then one header byte a second, never finishing the
request. A connection the server closes is opened again a second later,
as an attacker would. Prints one line of key=value figures:

  opened        connections opened in all
  refused       closed by the server within 1 s of its request line being
                sent (a limit), or never connected
  cut           closed by the server later (a timeout)
  longest       the longest a connection stayed open, seconds, from the
                request line sent
  held_max      the most connections open at once for over 2 s from one
                source address
  held_peak     the most connections open at once for over 2 s in all
"""
import selectors
import socket
import sys
import time


def main():
    host, port, seconds, n, naddr = (sys.argv[1], int(sys.argv[2]),
                                     float(sys.argv[3]), int(sys.argv[4]),
                                     int(sys.argv[5]))
    sel = selectors.DefaultSelector()
    # slot i: its source address, socket, when its request line went
    # (0: not yet), when to reopen
    slots = [{"src": "127.0.0.%d" % (2 + i % naddr), "sock": None,
              "sent": 0.0, "reopen": 0.0} for i in range(n)]
    fig = {"opened": 0, "refused": 0, "cut": 0, "longest": 0.0,
           "held_max": 0, "held_peak": 0}

    def close(slot, now, by_server):
        sel.unregister(slot["sock"])
        slot["sock"].close()
        slot["sock"] = None
        held = now - slot["sent"] if slot["sent"] else 0.0
        if by_server:
            fig["refused" if held < 1.0 else "cut"] += 1
        fig["longest"] = max(fig["longest"], held)
        slot["reopen"] = now + 1.0

    start = time.monotonic()
    next_byte = start
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        for slot in slots:
            if slot["sock"] is None and now >= slot["reopen"]:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                try:
                    s.bind((slot["src"], 0))
                    s.connect_ex((host, port))
                except OSError:
                    s.close()
                    slot["reopen"] = now + 1.0
                    continue
                slot["sock"], slot["sent"] = s, 0.0
                sel.register(s, selectors.EVENT_READ, slot)
                fig["opened"] += 1
        if now >= next_byte:
            next_byte += 1.0
            per_addr = {}
            for slot in slots:
                s = slot["sock"]
                if s is None:
                    continue
                try:
                    if not slot["sent"]:
                        s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        slot["sent"] = now
                    else:
                        s.send(b"a")
                except BlockingIOError:
                    pass
                except OSError:
                    close(slot, now, True)
                    continue
                if slot["sent"] and now - slot["sent"] > 2.0:
                    per_addr[slot["src"]] = per_addr.get(slot["src"], 0) + 1
            if per_addr:
                fig["held_max"] = max(fig["held_max"], max(per_addr.values()))
                fig["held_peak"] = max(fig["held_peak"],
                                       sum(per_addr.values()))
        for key, _ in sel.select(timeout=0.05):
            slot = key.data
            try:
                data = slot["sock"].recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(slot, time.monotonic(), True)
    now = time.monotonic()
    for slot in slots:
        if slot["sock"] is not None:
            close(slot, now, False)
    print(" ".join("%s=%s" % (k, round(v, 1) if isinstance(v, float) else v)
                   for k, v in fig.items()))


if __name__ == "__main__":
    main()
