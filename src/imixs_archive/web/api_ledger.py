"""``/api/ledger``: the signed log of what the archive did (docs/ledger.md): its state, the
latest checkpoint, inclusion and consistency proofs, ledger verify as a job. The same
service functions as ``imixs-archive ledger``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from imixs_archive.errors import NotFoundError
from imixs_archive.ledger.proofs import consistency, inclusion
from imixs_archive.ledger.schedule import LedgerSchedule, ledger_status, sign_now
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.verify import last_verify, verify_ledger
from imixs_archive.services.jobs import MAX_LISTED, Job
from imixs_archive.web.api_jobs import answers_job, job_status, starts_job
from imixs_archive.web.api_models import Responses
from imixs_archive.web.dependencies import Auditor, Manager, Reader, Services, Svc
from imixs_archive.web.problems import PROBLEM_RESPONSES

router = APIRouter(prefix="/api/ledger", tags=["ledger"], responses=PROBLEM_RESPONSES)
JOB = "ledger-verify"


def _conflict(text: str) -> Responses:
    """A 409 problem answer, for the OpenAPI description (PROBLEM_RESPONSES has none)."""
    return {409: {**PROBLEM_RESPONSES[400], "description": text}}


def _sequencer(svc: Services) -> Sequencer:
    schedule: LedgerSchedule | None = svc.ledger
    if schedule is None:
        raise NotFoundError("the ledger is not run by this service")
    return schedule.sequencer


@router.get("", summary="The ledger: size, origin, public key, last checkpoint, last verify")
def get_ledger(svc: Svc, _who: Reader) -> dict[str, Any]:
    return ledger_status(svc.archive, svc.ledger)


@router.get(
    "/checkpoint",
    summary="The latest signed checkpoint (a C2SP signed note, text/plain)",
    response_class=PlainTextResponse,
)
def get_checkpoint(svc: Svc, _who: Auditor) -> PlainTextResponse:
    tree = _sequencer(svc).tree()
    if tree is None or not tree.checkpoint:
        raise NotFoundError("the ledger has no signed checkpoint yet")
    return PlainTextResponse(tree.checkpoint)


@router.post(
    "/checkpoint",
    summary="Log what is queued and sign a checkpoint now",
    response_class=PlainTextResponse,
    responses=_conflict("another process sequences the ledger right now: try again shortly"),
)
def sign_checkpoint(svc: Svc, _who: Manager) -> PlainTextResponse:
    note, _notes = sign_now(_sequencer(svc))  # the notes are in the log
    return PlainTextResponse(note)


@router.get("/proof/{snapshot_id}", summary="Inclusion proof of a snapshot's last entry")
def get_proof(snapshot_id: str, svc: Svc, _who: Auditor) -> dict[str, Any]:
    return inclusion(svc.archive, _sequencer(svc), snapshot_id)


@router.get("/consistency", summary="Proof that an older log is the start of today's")
def get_consistency(
    svc: Svc, _who: Auditor, old: Annotated[int, Query(alias="from", ge=0)] = 0
) -> dict[str, Any]:
    return consistency(svc.archive, _sequencer(svc), old)


def verify_job(svc: Services) -> Any:
    def run(job: Job) -> str:
        def tick(stage: str, count: int) -> None:
            job.add(**{stage: count})
            job.check_stop()

        sequencer = svc.ledger.sequencer if svc.ledger is not None else None
        report = verify_ledger(svc.archive, svc.settings, progress=tick, sequencer=sequencer)
        result = report.to_json()
        for name in ("altered", "removed", "unlogged", "not_logged", "problems", "warnings"):
            result[f"{name}_count"] = len(result[name])
            result[name] = result[name][:MAX_LISTED]
        job.set_result(result)
        verdict = "everything holds" if report.ok else f"{len(report.problems)} problems"
        return f"checked {report.checked} entries, {report.snapshots} snapshots: {verdict}"

    return run


@starts_job(
    router,
    "/verify",
    "Start ledger verify (resumes a stopped one)",
    _conflict("ledger verify is running already"),
)
def start_verify(svc: Svc, _who: Manager) -> dict[str, Any]:
    return svc.jobs.start(JOB, verify_job(svc), message="verifying the ledger").to_json()


@answers_job(
    router, "GET", "/verify", "Status and findings of the last ledger verify of this service"
)
def get_verify(svc: Svc, _who: Reader) -> dict[str, Any]:
    return job_status(svc, JOB, last=last_verify(svc.archive))
