"""A seeded concurrency and fault torture of the archive (issue 48, item 3).

Several real processes run at once against one store (``import``, pushes to a real
``serve``, ``sync`` from the workflow double, ``delete``, ``retention``, legal holds,
``gc``, ``verify``, ``backup``, ``restore`` to the double, ledger rounds,
``export-table``, and readers of every kind), some of them SIGKILLed at random points; after
every round the harness checks the store against a model it keeps of what was sent and
what was acknowledged.

* :mod:`.corpus`: the data, deterministic from the seed (4-6 KB snapshots, attachments
  carried forward, a file shared between instances, some large attachments);
* :mod:`.schedule`: the rounds, deterministic from the seed: which operations start when,
  with which data, and which are killed after how long;
* :mod:`.model`: what must be there (acknowledged), what may be there (sent), legal holds;
* :mod:`.operations`: how each operation runs (the real CLI, HTTP to ``serve``, the
  double) and what its outcome acknowledges;
* :mod:`.invariants`: the checks after a round;
* :mod:`.runner`: the store (SQLite or a fresh Cassandra keyspace), ``serve``, the double
  and the loop of rounds.

Same seed, same schedule and data. The timing across processes is not deterministic (a
kill after 1.3 s lands wherever the process is by then, and the processes race), so a
failure replays its schedule, not necessarily the failure: run the printed command a few
times.
"""
