"""Bringing data back and keeping copies: backups to plain files (``backup.py``, written
durably by ``durable_files.py``) and over FTPS (``ftps.py``, ``backup_ftps.py``), restores
into the workflow (``restore.py``, ``restore_files.py``, run by ``restore_jobs.py``), and
the copy of a whole archive into another store (``export.py``)."""
