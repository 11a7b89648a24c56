"""Apache Cassandra (and ScyllaDB): ``backend.py`` (``CassandraBackend``, derived from the
model), ``cql.py`` (every statement), ``config.py`` (the settings), ``session.py`` (the
driver). Importing this package loads no driver: ``storage/factory.py`` imports
``backend`` only when a cluster is configured."""
