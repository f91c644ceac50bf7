"""The access log's query masking, end to end: every credential-like query parameter — however
its name is spelled on the wire, built in or named in `log.redact_query` — is written `***`,
in the JSON and the text format, over HTTP/1.1 and HTTP/2; nothing else is."""
import pytest

from conftest import access_line, poll
from h2_support import H2Client

# (query as sent, query as logged): each SECRET… a value that must never be written.
CASES = [
    ("api_key=SECRET01&q=cats", "api_key=***&q=cats"),
    ("key=SECRET02&sig=SECRET03", "key=***&sig=***"),
    ("X-Amz-Signature=SECRET04&X-Amz-Credential=SECRET05&X-Amz-Security-Token=SECRET06&X-Amz-Date=20260101",
     "X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Security-Token=***&X-Amz-Date=20260101"),
    ("jwt=SECRET07&auth=SECRET08&password=SECRET09&secret=SECRET10", "jwt=***&auth=***&password=***&secret=***"),
    ("%63ode=SECRET11&code[]=SECRET12&CODE[0]=SECRET13", "%63ode=***&code[]=***&CODE[0]=***"),
    ("%63%6F%64%65=SECRET14&st%61te=SECRET15", "%63%6F%64%65=***&st%61te=***"),
    ("access_token=SECRET16&id_token=SECRET17&refresh_token=SECRET18&client_secret=SECRET19",
     "access_token=***&id_token=***&refresh_token=***&client_secret=***"),
    ("signature=SECRET20&session=SECRET21&apikey=SECRET22&passwd=SECRET23&pwd=SECRET24&token=SECRET25",
     "signature=***&session=***&apikey=***&passwd=***&pwd=***&token=***"),
    ("API-KEY=SECRET26&Access.Token=SECRET27&creds[password]=SECRET28", "API-KEY=***&Access.Token=***&creds[password]=***"),
    ("page=2;token=SECRET29&next=/a?code=SECRET30", "page=2;token=***&next=/a?code=***"),
    ("otp=SECRET31&Tenant_Pin=SECRET32&plain=1", "otp=***&Tenant_Pin=***&plain=1"),
]
EXTRA = {"log": {"redact_query": ["otp", "tenant-pin"]}}


def request_ids(prefix):
    return ["%s-%d" % (prefix, i) for i in range(len(CASES))]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_no_credential_in_a_query_reaches_the_access_log(start_sidecar, fmt):
    sc = start_sidecar({"log": {"format": fmt, "redact_query": EXTRA["log"]["redact_query"]}})
    ids = request_ids("redact-" + fmt)
    for rid, (query, _) in zip(ids, CASES):
        assert sc.request("GET", "/echo?" + query, [("X-Request-Id", rid)]).status == 200
    if fmt == "json":
        for rid, (_, logged) in zip(ids, CASES):
            assert access_line(sc, rid)["query"] == logged
    else:
        assert poll(lambda: ids[-1] in sc.output())
        for rid, (_, logged) in zip(ids, CASES):
            line = next(line for line in sc.output().splitlines() if rid in line)
            assert " query=" + logged + " " in line, line
    assert "SECRET" not in sc.output()


def test_no_credential_in_an_h2_query_reaches_the_access_log(start_sidecar):
    sc = start_sidecar(EXTRA)
    ids = request_ids("redact-h2")
    c = H2Client(sc.port)
    try:
        for rid, (query, _) in zip(ids, CASES):
            assert c.request("GET", "/echo?" + query, [("x-request-id", rid)]).status == 200
    finally:
        c.close()
    for rid, (_, logged) in zip(ids, CASES):
        assert access_line(sc, rid)["query"] == logged
    assert "SECRET" not in sc.output()


def test_a_redact_query_entry_that_names_nothing_is_refused(start_sidecar):
    sc = start_sidecar({"log": {"redact_query": ["otp", "--"]}}, ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert "log.redact_query" in sc.output(), sc.output()
