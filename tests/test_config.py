"""The settings registry: precedence, parsing, and every setting documented."""

from pathlib import Path

import pytest

from imixs_archive.config import describe_settings, load_settings, settings_for_store
from imixs_archive.errors import ConfigError

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_flag_beats_environment_beats_default() -> None:
    assert load_settings({}).data_dir == Path("archive-data")
    env = {"ARCHIVE_DATA_DIR": "/from/env", "ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "4"}
    assert load_settings(env).data_dir == Path("/from/env")
    assert load_settings(env, data_dir=Path("/from/flag")).data_dir == Path("/from/flag")
    assert load_settings(env, data_dir=None).data_dir == Path("/from/env")
    assert load_settings(env).cluster_write_concurrency == 4


def test_bad_values_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_WRITE_CONCURRENCY"):
        load_settings({"ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "many"})
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_SSL"):
        load_settings({"ARCHIVE_CLUSTER_SSL": "perhaps"})
    with pytest.raises(ConfigError, match="unknown settings"):
        load_settings({}, no_such_setting=1)


def test_cassandra_is_chosen_by_contact_points() -> None:
    assert not load_settings({}).uses_cassandra
    assert load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "db1,db2:9043"}).uses_cassandra


def test_target_stores() -> None:
    base = load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "db1"})
    folder = settings_for_store(base, "/backup/store")
    assert folder.data_dir == Path("/backup/store") and not folder.uses_cassandra
    cluster = settings_for_store(load_settings({}), "cassandra://db1:9042,db2/archive_copy")
    assert cluster.cluster_contactpoints == "db1:9042,db2"
    assert cluster.cluster_keyspace == "archive_copy"
    for bad in ("cassandra://db1", "cassandra:///ks", " "):
        with pytest.raises(ConfigError):
            settings_for_store(base, bad)


def test_every_setting_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [env for env, _default, _help in describe_settings() if f"`{env}`" not in text]
    assert not missing, f"add to docs/configuration.md (scripts/settings_doc.py): {missing}"


def test_secrets_have_no_default_shown() -> None:
    shown = {env: default for env, default, _help in describe_settings()}
    assert shown["ARCHIVE_CLUSTER_AUTH_PASSWORD"] == ""
