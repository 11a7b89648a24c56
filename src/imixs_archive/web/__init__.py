"""The archive service over HTTP: REST API, web UI, health and metrics (``create_app``)."""
