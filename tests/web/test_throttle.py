"""Failed logins lock a user name for a while: unit rules with a fake clock, and 429 with
Retry-After over HTTP (the app in process)."""

from __future__ import annotations

from urllib.parse import unquote

from imixs_archive.web.throttle import LONGEST_LOCK, MAX_NAMES, LoginThrottle
from web.live import LiveServer


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_name_is_locked_after_five_failures_and_longer_while_they_go_on() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(4):
        throttle.failed("rex")
        assert throttle.wait("rex") == 0
    throttle.failed("rex")
    assert throttle.wait("rex") == 30
    assert throttle.wait("other") == 0
    clock.now += 30
    assert throttle.wait("rex") == 0
    throttle.failed("rex")
    assert throttle.wait("rex") == 60
    for _ in range(10):
        throttle.failed("rex")
    assert throttle.wait("rex") == LONGEST_LOCK
    throttle.succeeded("rex")
    assert throttle.wait("rex") == 0
    throttle.failed("rex")
    assert throttle.wait("rex") == 0  # counting starts again


def test_only_so_many_names_are_remembered() -> None:
    throttle = LoginThrottle(Clock())
    for _ in range(5):
        throttle.failed("first")
    for n in range(MAX_NAMES):
        throttle.failed(f"name-{n}")
    assert throttle.wait("first") == 0  # forgotten, the oldest


def test_guessing_a_password_gets_429_then_the_form_says_so(live: LiveServer) -> None:
    with live.client(auth=("mallory", "guess")) as client:
        for _ in range(5):
            assert client.get("/api/stats").status_code == 401
        locked = client.get("/api/stats")
    assert locked.status_code == 429
    assert 1 <= int(locked.headers["retry-after"]) <= 30
    assert "too many failed logins" in locked.json()["message"]
    with live.client() as client:
        form = client.post("/login", data={"username": "mallory", "password": "x", "next": "/"})
        assert form.status_code == 303
        assert "too many failed logins" in unquote(form.headers["location"])
    with live.client("reader") as client:  # other names are not affected
        assert client.get("/api/stats").status_code == 200


def test_attempts_are_counted_before_the_password_is_checked() -> None:
    """Concurrent guesses cannot race past the lock: only the free failures are checked."""
    throttle = LoginThrottle(Clock())
    begun = [throttle.begin("rex") for _ in range(40)]
    assert begun.count(0.0) == 5
    assert all(wait > 0 for wait in begun if wait)
    for _ in range(5):
        throttle.failed("rex")
    assert throttle.begin("rex") == 30


def test_concurrent_wrong_passwords_get_429_without_hashing(live: LiveServer) -> None:
    import concurrent.futures

    def attempt(_n: int) -> int:
        with live.client(auth=("racer", "guess")) as client:
            return client.get("/api/stats").status_code

    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        codes = list(pool.map(attempt, range(40)))
    assert codes.count(401) <= 5
    assert codes.count(429) >= 35
