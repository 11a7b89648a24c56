"""Folders on the server that the web names: only inside ``ARCHIVE_BACKUP_DIR``.

A backup started from the API or the UI writes there, a restore from files reads from
there; whoever may start either must not reach any other folder of the server. One check
for every such entry point (the CLI takes any folder: its user has the machine's files
already). A path is taken relative to the backup folder, or absolute; it is resolved
(``..`` and symbolic links followed) before it is compared, so neither leads out.
"""

from __future__ import annotations

from pathlib import Path

from imixs_archive.config import Settings
from imixs_archive.web.problems import BadRequestError


def inside_backup_dir(settings: Settings, text: str, *, must_exist: bool) -> Path:
    """The folder ``text`` names inside ``ARCHIVE_BACKUP_DIR`` (empty or ``.``: the backup
    folder itself), resolved; a 400 for one outside it, or, with ``must_exist``, for one
    that is not an existing folder."""
    text = text.strip()
    try:
        base = settings.backup_dir.resolve()
        given = Path(text or ".")
        root = (given if given.is_absolute() else base / given).resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise BadRequestError(f"not a usable path: {text!r} ({exc})") from None
    if root != base and base not in root.parents:
        raise BadRequestError(
            f"{text!r} is outside the backup folder {base} (ARCHIVE_BACKUP_DIR): only "
            "folders inside it can be used from the web"
        )
    if must_exist and not root.exists():
        raise BadRequestError(f"the backup folder {root} does not exist on the server")
    if root.exists() and not root.is_dir():
        raise BadRequestError(f"{root} is not a folder")
    return root
