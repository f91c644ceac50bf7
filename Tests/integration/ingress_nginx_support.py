"""The nginx configuration ingress-nginx generates from the external-authentication
annotations of Examples/kubernetes/ingress-nginx/ingress.yaml, for a real nginx to run.

ingress-nginx turns an Ingress with `auth-url` into three parts of its nginx.tmpl (the
controller's template and template.go, read for this; OpenResty's Lua balancer aside, they
are plain nginx): an internal location per path that proxies a body-less subrequest to the
auth-url with the request's headers and a fixed set of its own (X-Original-URL,
X-Original-Method, X-Sent-From, X-Auth-Request-Redirect, …, then the auth-proxy-set-headers
ConfigMap's), a named location that answers 401 with a redirect to `auth-signin` carrying
`rd=$pass_access_scheme://$http_host$escaped_request_uri` (set-misc's set_escape_uri), and in
the path's own location `auth_request` with one `auth_request_set` + `proxy_set_header` per
`auth-response-headers` name. This module builds those parts from the manifest's annotations
the way the template does, so the tests exercise what the shipped Ingress makes ingress-nginx
do, and a change to its annotations changes what they run.

Only addresses differ from a cluster: the auth-url's and the Services' host:port become the
test's loopback ports (the auth subrequest's Host header stays the auth-url's host, as
ingress-nginx sends it), and TLS uses the test's certificate."""
import base64
import hashlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "Examples" / "kubernetes" / "ingress-nginx"
PREFIX = "nginx.ingress.kubernetes.io/"
SET_MISC = ("/usr/lib/nginx/modules/ndk_http_module.so", "/usr/lib/nginx/modules/ngx_http_set_misc_module.so")


def manifests():
    """{(kind, name): object} of ingress.yaml."""
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all((EXAMPLE / "ingress.yaml").read_text())}


def auth_location_name(path, path_type):
    # template.go buildAuthLocation: the path in unpadded URL-safe base64, then its pathType.
    encoded = base64.urlsafe_b64encode(path.encode()).decode().replace("=", "")
    return "/_external-auth-%s-%s" % (encoded, path_type)


def sign_in_url(signin, redirect_param="rd"):
    # template.go buildAuthSignURL: rd appended unless the URL already carries it.
    query = parse_qs(urlsplit(signin).query)
    if redirect_param in query:
        return signin
    return "%s%s%s=$pass_access_scheme://$http_host$escaped_request_uri" % (
        signin, "&" if query else "?", redirect_param)


def quoted(value):
    return "'%s'" % value.replace("\\", "\\\\").replace("'", "\\'")


def render(workdir, port, cert, key, sidecar_port, app_port, annotations=None):
    """nginx.conf for the app's Ingress (its annotations, or `annotations` instead) and the
    sidecar's, on 127.0.0.1:`port` with TLS, as ingress-nginx would generate it."""
    objects = manifests()
    app, sidecar_ingress = objects[("Ingress", "app")], objects[("Ingress", "siwa-sidecar")]
    notes = app["metadata"]["annotations"] if annotations is None else annotations
    ann = {k[len(PREFIX):]: v for k, v in notes.items() if k.startswith(PREFIX)}
    auth_url = urlsplit(ann["auth-url"])
    target = auth_url._replace(netloc="127.0.0.1:%d" % sidecar_port).geturl()

    rule = app["spec"]["rules"][0]["http"]["paths"][0]
    path, path_type = rule["path"], rule["pathType"]
    auth_path = auth_location_name(path, path_type)
    auth_headers = []
    if "auth-method" in ann:
        auth_headers += ["proxy_method %s;" % ann["auth-method"],
                         "proxy_set_header X-Original-URI $request_uri;",
                         "proxy_set_header X-Scheme $pass_access_scheme;"]
    if "auth-proxy-set-headers" in ann:
        namespace, name = ann["auth-proxy-set-headers"].split("/")
        data = objects[("ConfigMap", name)]["data"]
        auth_headers += sorted("proxy_set_header %s %s;" % (quoted(k), quoted(v)) for k, v in data.items())
    response = [h.strip() for h in ann.get("auth-response-headers", "").split(",") if h.strip()]
    copy_identity = []
    for i, header in enumerate(response):
        copy_identity += ["auth_request_set $authHeader%d $upstream_http_%s;" % (i, header.lower().replace("-", "_")),
                          "proxy_set_header %s $authHeader%d;" % (quoted(header), i)]
    sign_in = ""
    sign_in_named = ""
    if "auth-signin" in ann:
        sign_in_named = "@" + hashlib.sha1((path + ann["auth-signin"]).encode()).hexdigest()
        sign_in = """
        location %s {
            internal;
            add_header Set-Cookie $auth_cookie;
            return 302 %s;
        }
""" % (sign_in_named, sign_in_url(ann["auth-signin"], ann.get("auth-signin-redirect-param", "rd")))
    sidecar_path = sidecar_ingress["spec"]["rules"][0]["http"]["paths"][0]["path"].rstrip("/") + "/"

    temp = "".join("    %s_temp_path %s;\n" % (kind, workdir / ("tmp-" + kind))
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    modules = "".join("load_module %s;\n" % m for m in SET_MISC)
    # The headers of every proxied location (nginx.tmpl's location block).
    proxied = """
            set $pass_access_scheme  $scheme;
            set $pass_server_port    $server_port;
            set $best_http_host      $http_host;
            set $pass_port           $pass_server_port;
            proxy_set_header Host                   $best_http_host;
            proxy_set_header Upgrade                $http_upgrade;
            proxy_set_header Connection             $connection_upgrade;
            proxy_set_header X-Request-ID           $req_id;
            proxy_set_header X-Real-IP              $remote_addr;
            proxy_set_header X-Forwarded-For        $remote_addr;
            proxy_set_header X-Forwarded-Host       $best_http_host;
            proxy_set_header X-Forwarded-Port       $pass_port;
            proxy_set_header X-Forwarded-Proto      $pass_access_scheme;
            proxy_set_header X-Forwarded-Scheme     $pass_access_scheme;
            proxy_set_header X-Scheme               $pass_access_scheme;
            proxy_set_header X-Original-Forwarded-For $http_x_forwarded_for;
            proxy_set_header Proxy                  "";
            proxy_http_version 1.1;
"""
    return """%(modules)sworker_processes 1;
events { worker_connections 1024; }
http {
%(temp)s    access_log %(access)s;
    # ingress-nginx's http-level defaults that the auth path relies on.
    map $http_upgrade $connection_upgrade { default upgrade; '' close; }
    map $http_x_request_id $req_id { default $http_x_request_id; "" $request_id; }
    underscores_in_headers off;
    ignore_invalid_headers on;

    server {
        listen 127.0.0.1:%(port)d ssl;
        server_name %(host)s;
        ssl_certificate %(cert)s;
        ssl_certificate_key %(key)s;

        location = %(auth_path)s {
            internal;
            proxy_pass_request_body     off;
            proxy_set_header            Content-Length          "";
            proxy_set_header            X-Forwarded-Proto       "";
            proxy_set_header            X-Request-ID            $req_id;
            proxy_set_header            Host                    %(auth_host)s;
            proxy_set_header            X-Original-URL          $scheme://$http_host$request_uri;
            proxy_set_header            X-Original-Method       $request_method;
            proxy_set_header            X-Sent-From             "nginx-ingress-controller";
            proxy_set_header            X-Real-IP               $remote_addr;
            proxy_set_header            X-Forwarded-For         $remote_addr;
            proxy_set_header            X-Auth-Request-Redirect $request_uri;
            proxy_buffering             off;
            proxy_buffer_size           4k;
            proxy_buffers               4 4k;
            proxy_request_buffering     on;
            proxy_ssl_server_name       on;
            proxy_pass_request_headers  on;
            client_max_body_size        1m;
            %(auth_headers)s
            proxy_http_version 1.1;
            set $target %(target)s;
            proxy_pass $target;
        }
%(sign_in)s
        location %(sidecar_path)s {%(proxied)s
            proxy_pass http://127.0.0.1:%(sidecar_port)d;
        }

        location %(path)s {%(proxied)s
            auth_request        %(auth_path)s;
            auth_request_set    $auth_cookie $upstream_http_set_cookie;
            add_header          Set-Cookie $auth_cookie;
            %(copy_identity)s
            set_escape_uri $escaped_request_uri $request_uri;
            %(error_page)s
            proxy_pass http://127.0.0.1:%(app_port)d;
        }
    }
}
""" % dict(modules=modules, temp=temp, access=workdir / "access.log", port=port,
           host=app["spec"]["rules"][0]["host"], cert=cert, key=key, auth_path=auth_path,
           auth_host=auth_url.hostname, auth_headers="\n            ".join(auth_headers), target=target,
           sign_in=sign_in, sidecar_path=sidecar_path, proxied=proxied, sidecar_port=sidecar_port,
           path=path, copy_identity="\n            ".join(copy_identity),
           error_page="error_page 401 = %s;" % sign_in_named if sign_in_named else "", app_port=app_port)
