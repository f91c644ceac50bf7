#!/usr/bin/env python3
"""A WSGI static-file upstream that reads paths as leniently as common upstreams do, on the
standard library's WSGI server (wsgiref, which decodes `%2F` into PATH_INFO like every WSGI
server). It serves the files under --root, reading each request's path the way these
upstreams do, all at once:
  - `%2F` and `%5C` decoded into separators, `\\` taken for `/` (WSGI, PHP, IIS)
  - `;parameters` cut from every segment (Tomcat, Jetty, Spring)
  - trailing dots and spaces cut from every segment (IIS, Windows file names)
  - case ignored (Express's default router, ASP.NET, case-insensitive file systems)
  - empty segments merged and `..` resolved (nginx's merge_slashes, most static servers)
  - `X-HTTP-Method-Override` and friends honoured (Express's method-override, Laravel)
Every answer carries the request line it received (`X-Seen-Target`) and the method it ran
(`X-Ran-Method`), so a test can see what crossed the sidecar and how it was read.
Prints {"port": N} on stdout when listening.
"""
import argparse
import json
import os
import posixpath
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

OVERRIDES = ("HTTP_X_HTTP_METHOD_OVERRIDE", "HTTP_X_HTTP_METHOD", "HTTP_X_METHOD_OVERRIDE")


def lenient(path_info):
    path = path_info.replace("\\", "/")
    segments = []
    for segment in path.split("/"):
        segment = segment.split(";", 1)[0].rstrip(" ").lower()
        if segment not in (".", ".."):
            segment = segment.rstrip(". ")
        segments.append(segment)
    return posixpath.normpath("/" + "/".join(s for s in segments if s))


def app(root):
    def serve(environ, start_response):
        method = environ["REQUEST_METHOD"]
        for name in OVERRIDES:
            if environ.get(name):
                method = environ[name].strip().upper()
        path = lenient(environ.get("PATH_INFO", "/"))
        file = os.path.join(root, path.lstrip("/"))
        seen = [("X-Seen-Target", environ.get("RAW_TARGET", "")), ("X-Ran-Method", method),
                ("X-Read-As", path)]
        if os.path.isfile(file):
            body = open(file, "rb").read()
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))] + seen)
            return [body]
        body = b"not found\n"
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))] + seen)
        return [body]
    return serve


class Handler(WSGIRequestHandler):
    def get_environ(self):
        env = super().get_environ()
        env["RAW_TARGET"] = self.path
        return env

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    server = make_server("127.0.0.1", 0, app(args.root), server_class=WSGIServer, handler_class=Handler)
    print(json.dumps({"port": server.server_port}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
