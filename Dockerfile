# The archive as a container: `docker build -t imixs-archive .` (not built in CI: no Docker
# engine runs there; tests/deploy/test_container.py checks this file and the compose file).
# Used by docker-compose.yml to run the archive against Cassandra.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . && useradd --create-home --uid 1000 archive \
    && mkdir /data && chown archive /data

# Never root: the service runs as this user, and writes /data only.
USER archive
WORKDIR /data
# The embedded store lives here when no Cassandra contact point is set. The service
# listens on every address of the container: it then needs ARCHIVE_USERS and/or
# ARCHIVE_API_TOKENS (imixs-archive hash-password), or it refuses to start and says so.
ENV ARCHIVE_DATA_DIR=/data/archive-data \
    ARCHIVE_HTTP_HOST=0.0.0.0 \
    ARCHIVE_HTTP_PORT=8080
EXPOSE 8080
# Ready: the store answers and the sync (when configured) runs (/readyz needs no login).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; url = 'http://127.0.0.1:' + os.environ.get('ARCHIVE_HTTP_PORT', '8080') + '/readyz'; sys.exit(0 if urllib.request.urlopen(url, timeout=8).status == 200 else 1)"]
ENTRYPOINT ["imixs-archive"]
CMD ["serve"]
