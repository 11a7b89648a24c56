"""The job runner: one run per name, progress, stop requests, failures, shutdown."""

from __future__ import annotations

import threading

import pytest

from imixs_archive.errors import DocumentError, NotFoundError
from imixs_archive.services.jobs import Job, JobBusyError, JobRunner, JobState, ShuttingDownError


def test_a_job_runs_reports_progress_and_finishes() -> None:
    runner = JobRunner()

    def work(job: Job) -> str:
        for _ in range(3):
            job.add(done=1)
        job.progress(stage="end")
        return "three done"

    runner.start("count", work)
    status = runner.wait("count", 60)
    assert status is not None
    assert status.state is JobState.FINISHED
    assert status.progress == {"done": 3, "stage": "end"}
    assert status.message == "three done" and status.error is None
    assert status.finished is not None and status.finished >= status.started
    assert status.to_json()["state"] == "finished" and not status.to_json()["active"]


def test_one_run_per_name_and_stop_request() -> None:
    runner = JobRunner()
    started = threading.Event()

    def wait_for_stop(job: Job) -> str:
        started.set()
        job.stop_event.wait(60)
        return "stopped early" if job.stop_requested else "ran out"

    runner.start("long", wait_for_stop)
    assert started.wait(60)
    with pytest.raises(JobBusyError):
        runner.start("long", wait_for_stop)
    runner.start("other", lambda job: None)  # another name runs alongside
    assert runner.stop("long").state is JobState.STOPPING
    status = runner.wait("long", 60)
    assert status is not None and status.state is JobState.STOPPED
    assert status.message == "stopped early"
    # After it ended, the name can run again.
    runner.start("long", lambda job: "again")
    again = runner.wait("long", 60)
    assert again is not None and again.message == "again"
    assert {s.name for s in runner.statuses()} == {"long", "other"}


def test_failures_keep_the_message_and_never_raise() -> None:
    runner = JobRunner()

    def bad_input(job: Job) -> None:
        raise DocumentError("not a snapshot")

    def crash(job: Job) -> None:
        raise RuntimeError("boom")

    runner.start("a", bad_input)
    runner.start("b", crash)
    a, b = runner.wait("a", 60), runner.wait("b", 60)
    assert a is not None and a.state is JobState.FAILED and a.error == "not a snapshot"
    assert b is not None and b.error == "internal error: RuntimeError: boom"


def test_unknown_job_and_shutdown() -> None:
    runner = JobRunner()
    assert runner.status("never") is None
    with pytest.raises(NotFoundError):
        runner.stop("never")
    runner.start("loop", lambda job: "bye" if job.stop_event.wait(60) else "timeout")
    assert runner.shutdown(timeout=60) == []
    status = runner.status("loop")
    assert status is not None and status.state is JobState.STOPPED and status.message == "bye"
    with pytest.raises(ShuttingDownError):
        runner.start("late", lambda job: None)


def test_check_stop_ends_a_job_as_stopped_and_keeps_its_result() -> None:
    runner = JobRunner()
    release = threading.Event()

    def steps(job: Job) -> str:
        job.set_result({"seen": 1})
        release.wait(60)
        job.check_stop()
        return "never"

    runner.start("steps", steps)
    runner.stop("steps")
    release.set()
    status = runner.wait("steps", 60)
    assert status is not None and status.state is JobState.STOPPED
    assert status.message == "steps stopped on request" and status.result == {"seen": 1}
