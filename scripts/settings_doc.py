"""Print docs/configuration.md from the settings registry (run after adding a setting):

.venv/bin/python scripts/settings_doc.py > docs/configuration.md
"""

from imixs_archive.config import describe_settings

HEADER = """# Configuration

Every setting is an environment variable; a command-line flag, where there is one, wins.
Names follow the Java Imixs-Archive where it has one. This page is generated from the
settings registry in `src/imixs_archive/config.py` by `scripts/settings_doc.py`.

| variable | default | meaning |
|---|---|---|"""


def main() -> None:
    print(HEADER)
    for env, default, help_text in describe_settings():
        shown = f"`{default}`" if default else ""
        escaped = help_text.replace("|", "\\|")
        print(f"| `{env}` | {shown} | {escaped} |")


if __name__ == "__main__":
    main()
