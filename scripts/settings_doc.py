"""Print docs/configuration.md from the settings registry (run after adding a setting):

.venv/bin/python scripts/settings_doc.py > docs/configuration.md
"""

from imixs_archive.config import JAVA_IGNORED, JAVA_ONLY, describe_settings

HEADER = """# Configuration

Every setting is an environment variable; a command-line flag, where there is one, wins.
Names follow the Java Imixs-Archive where it has one. This page is generated from the
settings registry in `src/imixs_archive/config.py` by `scripts/settings_doc.py`.

Durations (timeouts, intervals, delays) take a unit: `500ms`, `30s`, `5m`, `1h`, `1d`
(decimals too: `1.5s`). A bare number keeps the unit each setting has always had, which its
line names: seconds for the `ARCHIVE_*` durations except `ARCHIVE_RETENTION_INTERVAL`,
milliseconds for it and the `WORKFLOW_*` ones but the two `WORKFLOW_REST_*` timeouts, which
are seconds (the Java services' names and units). A value
that cannot be read stops the start with one line naming the setting, the value and what is
expected.

| variable | default | meaning |
|---|---|---|"""

JAVA_HEADER = """
## Beside the Java service

The MicroProfile spellings of these names are read too, as the Java service reads them
(`workflow_service_endpoint`, `workflow.service.endpoint`); two spellings with different
values are an error. Durations take a unit (`500ms`, `300s`, `2m`, see above);
`WORKFLOW_REST_CONNECTTIMEOUT` and `WORKFLOW_REST_READTIMEOUT` read a bare number as
seconds whatever its size, as the Java backup service does (`3600` is one hour).
`ARCHIVE_CLUSTER_*` settings without `ARCHIVE_CLUSTER_CONTACTPOINTS` are an error, not a
silent local SQLite store.

Values given as JVM system properties (`-DNAME=value` in `JAVA_OPTS` or
`JAVA_TOOL_OPTIONS`, in any of the spellings above) are read as the Java services read
them; one set there and in the environment to different values is an error. Values in a
Java service's `microprofile-config.properties` are not read: that file is packed inside
the Java service's WAR (`META-INF/`), where it holds the service's defaults; a value
changed there belongs in the environment here.

These Java settings are not read here and are harmless to leave set: `serve` logs a
warning for each at start, and `doctor` lists them:

| Java setting | why |
|---|---|
{ignored}

`TZ` (the Java services' JVM zone) is not read either: days, months and ranges follow
`ARCHIVE_TIMEZONE` (UTC when unset; a warning names `TZ` then). A missing
`ARCHIVE_CLUSTER_KEYSPACE`, which the Java service refuses, is `imixs_archive` here, with
a warning. Cassandra is read and written at `LOCAL_QUORUM` (the Java service used
`LOCAL_ONE`: with two copies, one node down now stops the writes); while neither
`ARCHIVE_CLUSTER_CONSISTENCY_*` is set, a warning says so.

These Java settings are not read here; set, they stop the start with this message:

| Java setting | use instead |
|---|---|"""


def main() -> None:
    print(HEADER)
    for env, default, help_text in describe_settings():
        shown = f"`{default}`" if default else ""
        escaped = help_text.replace("|", "\\|")
        print(f"| `{env}` | {shown} | {escaped} |")
    ignored = "\n".join(f"| `{name}` | {why} |" for name, why in JAVA_IGNORED.items())
    print(JAVA_HEADER.replace("{ignored}", ignored))
    for name, replacement in JAVA_ONLY.items():
        print(f"| `{name}` | {replacement} |")


if __name__ == "__main__":
    main()
