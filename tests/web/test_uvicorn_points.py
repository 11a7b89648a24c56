"""Each private point of uvicorn's h11 protocol that ``web/connections.py`` relies on, checked
on the installed uvicorn (``pyproject.toml`` bounds it to the versions tested): a release
that renames or drops one fails here, by name, instead of leaving ``serve`` without its
guard against half-sent requests."""

from __future__ import annotations

import inspect

import uvicorn
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from imixs_archive.web.connections import GuardedH11


def test_uvicorn_is_a_version_the_bound_admits() -> None:
    assert uvicorn.__version__.split(".")[:2] == ["0", "54"], uvicorn.__version__


def test_the_protocol_has_the_points_the_guard_uses() -> None:
    assert issubclass(GuardedH11, H11Protocol)
    source = inspect.getsource(H11Protocol)
    for name in ("self.conn =", "self.cycle", "self.flow =", "self.connections"):
        assert name in source, name
    for method in ("connection_made", "data_received", "on_response_complete"):
        assert callable(getattr(H11Protocol, method)), method
    assert "response_started" in inspect.getsource(RequestResponseCycle)
    assert "read_paused" in inspect.getsource(FlowControl)
