"""Analytics over the archived business data: a service layer beside ``services/``.

What the CLI (``imixs-archive analyze``, ``export-table``) and the web API call:

* :func:`aggregates.aggregate_days` - snapshots, process instances, new attachments and
  bytes per day (of a time zone, ``timezones.py``) and per ``type`` / group / status /
  task / creator; finished UTC days are stored once in quarter-hour cells
  (``cells.py``, ``day_store.py``) and any zone's days assembled from them;
* :func:`history.instance_history` - one process instance step by step;
* :func:`leadtimes.lead_times` - time from first to last snapshot of finished instances,
  per workflow group, with percentiles;
* :func:`export_table.export_table` - one row per snapshot (or per newest snapshot of
  each instance) with chosen items as typed columns, streamed to Parquet or CSV.

Every result has ``to_json()``. Imports point down: ``archive/``, ``document/``, ``storage/``.
"""
