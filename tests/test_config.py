"""The settings registry: precedence, parsing, and every setting documented."""

from pathlib import Path

import pytest

from imixs_archive.config import describe_settings, java_warnings, load_settings, settings_for_store
from imixs_archive.errors import ConfigError

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_flag_beats_environment_beats_default() -> None:
    assert load_settings({}).data_dir == Path("archive-data")
    env = {
        "ARCHIVE_DATA_DIR": "/from/env",
        "ARCHIVE_CLUSTER_CONTACTPOINTS": "db1",
        "ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "4",
    }
    assert load_settings(env).data_dir == Path("/from/env")
    assert load_settings(env, data_dir=Path("/from/flag")).data_dir == Path("/from/flag")
    assert load_settings(env, data_dir=None).data_dir == Path("/from/env")
    assert load_settings(env).cluster_write_concurrency == 4


def test_bad_values_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_WRITE_CONCURRENCY"):
        load_settings({"ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "many"})
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_SSL"):
        load_settings({"ARCHIVE_CLUSTER_SSL": "perhaps", "ARCHIVE_CLUSTER_CONTACTPOINTS": "db"})
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
    for bad in ("cassandra://db1", "cassandra:///ks", " ", "cassandra:/ks", "cassandra:ks"):
        with pytest.raises(ConfigError):
            settings_for_store(base, bad)


def test_every_setting_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [env for env, _default, _help in describe_settings() if f"`{env}`" not in text]
    assert not missing, f"add to docs/configuration.md (scripts/settings_doc.py): {missing}"


def test_secrets_have_no_default_shown() -> None:
    shown = {env: default for env, default, _help in describe_settings()}
    assert shown["ARCHIVE_CLUSTER_AUTH_PASSWORD"] == ""


# -- beside the Java service: its names and units ---------------------------------------------


@pytest.mark.parametrize(
    ("raw", "millis"),
    [
        ("10000ms", 10000),
        ("300s", 300_000),
        ("300 s", 300_000),
        ("2m", 120_000),
        ("1500ms", 1500),
        ("300", 300_000),
        ("3600", 3_600_000),
        ("1.5", 1500),
    ],
)
def test_workflow_timeouts_take_units_and_a_bare_number_is_seconds(raw: str, millis: int) -> None:
    """The Java backup service reads these two names in seconds, whatever the size
    (``READTIMEOUT=3600`` is an hour there): so does this archive."""
    settings = load_settings(
        {"WORKFLOW_REST_READTIMEOUT": raw, "WORKFLOW_REST_CONNECTTIMEOUT": raw}
    )
    assert settings.workflow_rest_readtimeout == settings.workflow_rest_connecttimeout == millis


@pytest.mark.parametrize("name", ["WORKFLOW_REST_READTIMEOUT", "WORKFLOW_REST_CONNECTTIMEOUT"])
def test_a_workflow_timeout_that_is_no_duration_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: "five minutes"})


def test_other_millisecond_settings_take_units_too() -> None:
    assert load_settings({"WORKFLOW_SYNC_INTERVAL": "5s"}).workflow_sync_interval == 5000
    assert load_settings({"WORKFLOW_SYNC_INTERVAL": "200"}).workflow_sync_interval == 200


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("ARCHIVE_CLUSTER_SSL_TRUSTSTOREPATH", "ARCHIVE_CLUSTER_SSL_CA"),
        ("ARCHIVE_CLUSTER_SSL_TRUSTSTOREPASSWORD", "ARCHIVE_CLUSTER_SSL_CA"),
        ("ARCHIVE_CLUSTER_SSL_KEYSTOREPATH", "ARCHIVE_CLUSTER_SSL_CERT"),
        ("ARCHIVE_CLUSTER_SSL_KEYSTOREPASSWORD", "ARCHIVE_CLUSTER_SSL_KEY"),
        ("archive_cluster_ssl_truststorepath", "ARCHIVE_CLUSTER_SSL_CA"),
        ("IMIXS_REST_CLIENT_INSECURE", "WORKFLOW_REST_CAFILE"),
    ],
)
def test_java_only_settings_are_refused_with_the_replacement(name: str, replacement: str) -> None:
    env = {name: "true", "ARCHIVE_CLUSTER_CONTACTPOINTS": "db1"}
    with pytest.raises(ConfigError, match=rf"{name.upper()} .*Java.*use .*{replacement}"):
        load_settings(env)


def test_insecure_off_is_harmless() -> None:
    assert load_settings({"IMIXS_REST_CLIENT_INSECURE": "false"}).workflow_rest_cafile == ""


def test_microprofile_spellings_are_honoured() -> None:
    env = {"workflow_service_endpoint": "http://wf/api", "workflow.service.user": "ann"}
    settings = load_settings(env)
    assert settings.workflow_service_endpoint == "http://wf/api"
    assert settings.workflow_service_user == "ann"
    same = {"WORKFLOW_SERVICE_USER": "ann", "workflow_service_user": "ann"}
    assert load_settings(same).workflow_service_user == "ann"
    with pytest.raises(ConfigError, match="WORKFLOW_SERVICE_USER and workflow_service_user"):
        load_settings({"WORKFLOW_SERVICE_USER": "ann", "workflow_service_user": "bob"})


def test_cluster_settings_without_contact_points_are_an_error() -> None:
    """Not a silent local SQLite store (the Java service needs the contact points)."""
    with pytest.raises(
        ConfigError, match="ARCHIVE_CLUSTER_KEYSPACE set but ARCHIVE_CLUSTER_CONTACTPOINTS"
    ):
        load_settings({"ARCHIVE_CLUSTER_KEYSPACE": "imixs_archive"})
    with pytest.raises(ConfigError, match=r"ARCHIVE_CLUSTER_KEYSPACE set but"):
        load_settings({"archive.cluster.keyspace": "ks"})
    assert not load_settings({"ARCHIVE_CLUSTER_KEYSPACE": ""}).uses_cassandra
    cluster = load_settings(
        {"archive_cluster_contactpoints": "db1", "ARCHIVE_CLUSTER_KEYSPACE": "k"}
    )
    assert cluster.uses_cassandra and cluster.cluster_keyspace == "k"
    flagged = load_settings({"ARCHIVE_CLUSTER_KEYSPACE": "k"}, cluster_contactpoints="db1")
    assert flagged.uses_cassandra


def test_jvm_system_properties_are_read_as_the_java_services_read_them() -> None:
    env = {"JAVA_OPTS": "-Xmx1g -Dworkflow.service.endpoint=http://wf:8080/api -Dfoo=bar"}
    assert load_settings(env).workflow_service_endpoint == "http://wf:8080/api"
    tool = {"JAVA_TOOL_OPTIONS": "-DWORKFLOW_SYNC_INTERVAL=7000"}
    assert load_settings(tool).workflow_sync_interval == 7000
    both = {**env, "WORKFLOW_SERVICE_ENDPOINT": "http://other/api"}
    with pytest.raises(ConfigError, match=r"-Dworkflow\.service\.endpoint and WORKFLOW_SERVICE"):
        load_settings(both)
    same = {**env, "WORKFLOW_SERVICE_ENDPOINT": "http://wf:8080/api"}
    assert load_settings(same).workflow_service_endpoint == "http://wf:8080/api"
    with pytest.raises(ConfigError, match="IMIXS_REST_CLIENT_INSECURE"):  # Java-only, as -D too
        load_settings({"JAVA_OPTS": "-Dimixs.rest.client.insecure=true"})
    with pytest.raises(ConfigError, match="JAVA_OPTS: unbalanced quotes"):
        load_settings({"JAVA_OPTS": "-Dx='y"})


def test_java_settings_left_unread_are_named_in_warnings() -> None:
    assert java_warnings({}) == []
    said = java_warnings(
        {
            "METRICS_ENABLED": "true",
            "EXPORT_PATH": "/exports",
            "TZ": "Europe/Berlin",
            "ARCHIVE_CLUSTER_CONTACTPOINTS": "db1",
        }
    )
    assert len(said) == 5
    assert said[0].startswith("METRICS_ENABLED is set but not read here")
    assert "imixs-archive-exporter" in said[1]
    assert "ARCHIVE_TIMEZONE=Europe/Berlin" in said[2]
    assert said[3].startswith("ARCHIVE_CLUSTER_KEYSPACE is not set")
    # the default consistency, said at the start (issue 45 item 6): Java read at LOCAL_ONE
    assert said[4].startswith("Cassandra reads and writes at LOCAL_QUORUM")
    assert "LOCAL_ONE" in said[4] and "one node down" in said[4]
    quiet = {
        "TZ": "Europe/Berlin",
        "ARCHIVE_TIMEZONE": "UTC",
        "ARCHIVE_CLUSTER_KEYSPACE": "k",
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "LOCAL_QUORUM",
    }
    assert java_warnings({**quiet, "ARCHIVE_CLUSTER_CONTACTPOINTS": "db1"}) == []
    assert java_warnings({"JAVA_OPTS": "-Dmetrics.enabled=false"})[0].startswith("METRICS")
