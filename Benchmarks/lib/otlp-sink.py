"""A collector sink for the tracing benchmark: answers every POST with 200 and counts the
spans it received (printed on SIGTERM). Usage: otlp-sink.py PORT"""
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

spans = 0


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global spans
        body = self.rfile.read(int(self.headers["Content-Length"]))
        for rs in json.loads(body)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans += len(ss["spans"])
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def stop(*_):
    print("otlp-sink: %d spans received" % spans, flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
