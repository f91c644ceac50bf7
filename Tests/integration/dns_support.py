"""A small authoritative DNS server on loopback (UDP), for tests of names that move: it answers
A queries for the names it is given with the addresses it holds now (TTL `ttl`, 1 s unless
set), AAAA queries with
no address, and anything else with NXDOMAIN. `set(name, [ips])` changes the answer at once;
`set(name, None)` makes the name fail (SERVFAIL), as a DNS server that lost it would."""
import socket
import struct
import threading


class DNSServer:
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.records = {}
        self.queries = 0
        self.ttl = 1
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def set(self, name, addresses):
        with self.lock:
            self.records[name.lower().rstrip(".")] = addresses

    def stop(self):
        self.sock.close()

    def serve(self):
        while True:
            try:
                query, peer = self.sock.recvfrom(512)
            except OSError:
                return
            try:
                answer = self.answer(query)
            except (ValueError, IndexError, struct.error):
                continue
            try:
                self.sock.sendto(answer, peer)
            except OSError:  # stopped meanwhile
                return

    def answer(self, query):
        ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
        if qdcount != 1:
            raise ValueError("one question")
        labels, offset = [], 12
        while query[offset]:
            length = query[offset]
            labels.append(query[offset + 1:offset + 1 + length].decode("ascii"))
            offset += 1 + length
        qtype, qclass = struct.unpack("!HH", query[offset + 1:offset + 5])
        question = query[12:offset + 5]
        name = ".".join(labels).lower()
        with self.lock:
            self.queries += 1
            known = name in self.records
            addresses = self.records.get(name)
            ttl = self.ttl
        if not known:
            rcode, records = 3, []  # NXDOMAIN
        elif addresses is None:
            rcode, records = 2, []  # SERVFAIL
        else:
            rcode, records = 0, addresses if qtype == 1 else []
        flags = 0x8400 | rcode  # a response, authoritative
        head = struct.pack("!HHHHHH", ident, flags, 1, len(records), 0, 0)
        body = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, ttl, 4) + socket.inet_aton(ip) for ip in records)
        return head + question + body
