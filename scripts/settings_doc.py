"""Print docs/configuration.md from the settings registry (run after adding a setting):

.venv/bin/python scripts/settings_doc.py > docs/configuration.md
"""

from imixs_archive.config import JAVA_ONLY, describe_settings

HEADER = """# Configuration

Every setting is an environment variable; a command-line flag, where there is one, wins.
Names follow the Java Imixs-Archive where it has one. This page is generated from the
settings registry in `src/imixs_archive/config.py` by `scripts/settings_doc.py`.

Durations (timeouts, intervals, delays) take a unit: `500ms`, `30s`, `5m`, `1h`, `1d`
(decimals too: `1.5s`). A bare number keeps the unit each setting has always had, which its
line names: seconds for the `ARCHIVE_*` durations except `ARCHIVE_RETENTION_INTERVAL`,
milliseconds for it and the `WORKFLOW_*` ones (the Java service's names and units). A value
that cannot be read stops the start with one line naming the setting, the value and what is
expected.

| variable | default | meaning |
|---|---|---|"""

JAVA_HEADER = """
## Beside the Java service

The MicroProfile spellings of these names are read too, as the Java service reads them
(`workflow_service_endpoint`, `workflow.service.endpoint`); two spellings with different
values are an error. Durations take a unit (`500ms`, `300s`, `2m`, see above);
`WORKFLOW_REST_CONNECTTIMEOUT` and `WORKFLOW_REST_READTIMEOUT` refuse a bare number below
1000, because the Java backup service reads them in seconds. `ARCHIVE_CLUSTER_*` settings
without `ARCHIVE_CLUSTER_CONTACTPOINTS` are an error, not a silent local SQLite store.

These Java settings are not read here; set, they stop the start with this message:

| Java setting | use instead |
|---|---|"""


def main() -> None:
    print(HEADER)
    for env, default, help_text in describe_settings():
        shown = f"`{default}`" if default else ""
        escaped = help_text.replace("|", "\\|")
        print(f"| `{env}` | {shown} | {escaped} |")
    print(JAVA_HEADER)
    for name, replacement in JAVA_ONLY.items():
        print(f"| `{name}` | {replacement} |")


if __name__ == "__main__":
    main()
