"""imixs-archive: archive Imixs-Workflow snapshots on SQLite or Apache Cassandra."""

__version__ = "0.1.0"
