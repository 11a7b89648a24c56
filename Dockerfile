# The archive as a container: `docker build -t imixs-archive .`
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

USER archive
WORKDIR /data
# The embedded store lives here when no Cassandra contact point is set.
ENV ARCHIVE_DATA_DIR=/data/archive-data
ENTRYPOINT ["imixs-archive"]
CMD ["--help"]
