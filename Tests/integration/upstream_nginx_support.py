"""nginx as the protected app: an HTTPS (or plain) upstream whose answers say what it saw of
the sidecar's connection (TLS version, whether the session was resumed, the SNI name, the
client certificate), so tests read the upstream's view from the response itself."""
import subprocess

from nginx_support import Nginx

ANSWER = ('"server=$server_port conn=$connection n=$connection_requests tls=$ssl_protocol reused=$ssl_session_reused sni=$ssl_server_name '
          'client=$ssl_client_s_dn verify=$ssl_client_verify host=$host uri=$request_uri\\n"')


def conf(workdir, port, cert=None, key=None, client_ca=None, keepalive_requests=1000, protocols="TLSv1.2 TLSv1.3"):
    temp = "".join("    %s_temp_path %s;\n" % (kind, workdir / ("tmp-" + kind))
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    tls = ""
    if cert:
        tls = "        ssl_certificate %s;\n        ssl_certificate_key %s;\n        ssl_protocols %s;\n" % (
            cert, key, protocols)
        if client_ca:
            tls += "        ssl_verify_client on;\n        ssl_client_certificate %s;\n" % client_ca
    return ("worker_processes 1;\nevents { worker_connections 1024; }\nhttp {\n%s"
            "    access_log %s;\n"
            "    server {\n        listen 127.0.0.1:%d%s;\n%s"
            "        keepalive_requests %d;\n"
            "        location / { default_type text/plain; return 200 %s; }\n"
            "    }\n}\n") % (temp, workdir / "access.log", port, " ssl" if cert else "", tls,
                            keepalive_requests, ANSWER)


def fields(body):
    """The upstream's answer as a dict (`conn`, `n`: the connection and its request count,
    `tls`, `reused`, `sni`, `client`, `verify`, `host`, `uri`)."""
    text = body.decode() if isinstance(body, bytes) else body
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def start(workdir, port, **kw):
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)
    return Nginx(workdir, conf(workdir, port, **kw), port).wait_ready()
