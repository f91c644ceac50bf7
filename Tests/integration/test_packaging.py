"""Deployment files checked as their tools check them (issue 12 item 3, issue 16 item 2):
the hardened systemd unit passes `systemd-analyze verify` against the built binary and raises
the descriptor limit enough for the default max_connections."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import sidecar_binary

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "Examples" / "systemd" / "sidecar.service"


def directives(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line.strip())
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def test_the_systemd_unit_is_hardened_and_sized_for_max_connections():
    d = directives(UNIT.read_text())
    for key, value in [("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes")]:
        assert d.get(key) == [value], (key, d.get(key))
    assert d["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert any("check --config" in v for v in d["ExecStartPre"])
    assert int(d["LimitNOFILE"][0]) >= 2 * 10000 + 128  # the default max_connections fits
    # setrlimit (raising the soft limit at start) must not be filtered away.
    assert not any("@resources" in v for v in d.get("SystemCallFilter", []))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path):
    unit = tmp_path / "sidecar.service"
    unit.write_text(UNIT.read_text().replace("/usr/local/bin/sidecar", str(sidecar_binary())))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [l for l in (r.stdout + r.stderr).splitlines() if "sidecar.service" in l]
    assert r.returncode == 0 and not problems, r.stdout + r.stderr
