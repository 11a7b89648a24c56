"""The sync from Imixs-Workflow: the loop over the workflow's event log (``service.py``),
its catch-up over ``/snapshot/syncpoint`` (``catchup.py``, ``syncpoint_gap.py``), the
resync (``resync.py``), the rules for failures and dead letters (``failures.py``), its
counters and status (``counters.py``, ``status.py``), and the one place that builds a sync
or a resync from the settings (``jobs.py``). Its records are its own tables
(``records.py``, built once by the archive as ``Archive.sync_records``). See ``docs/sync.md``."""
