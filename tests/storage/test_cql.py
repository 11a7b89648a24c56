"""Known-answer tests: the exact CQL text for every table and every query."""

from __future__ import annotations

import pytest

from imixs_archive.storage.cassandra import cql
from imixs_archive.storage.model import TABLES, Column, ColumnType, Table, table

KS = "imixs_archive"
SIMPLE_1 = cql.Replication(cql.SIMPLE, (("replication_factor", 1),))

SYNC_FAILURE_COLS = (
    "event_id, topic, ref, status, attempts, next_attempt, first_failed, last_failed, error"
)
SYNC_INSTANCE_COLS = (
    "instance, started, updated, state, events, archived,"
    " removed, bytes, failures, retries, dead_letters, lag_ms"
)
CLAIM_COLS = "event_id, topic, ref, instance, claimed"
GONE_COLS = "ref, event_id, topic, gone_at, instance"
PROGRESS_COLS = "name, point, updated, owner, note"


# The deterministic table ids (``cql.table_id``) for keyspace ``imixs_archive``. They must
# never change: processes of two versions starting at once must create the same tables.
TABLE_IDS: dict[str, str] = {
    "snapshots": "402da2b1-7ad7-5328-a232-edc1aff76b62",
    "snapshots_by_uniqueid": "08627a46-7faf-5d74-a9c2-c55fa57df70c",
    "snapshots_by_modified": "0cf0f525-0f37-5ad2-98d4-3259cf1df72d",
    "documents": "86551b7d-2cac-5c22-88e8-65a653cb4b06",
    "documents_data": "4214cce9-0139-5732-b627-c887b1432af3",
    "snapshots_by_document": "1eeb4471-c128-5425-81af-9154ef886991",
    "archive_files": "b27eec0a-73c2-5048-a851-d8cf6e34b7c2",
    "archive_file_cuts": "16d07fe6-cd52-5c09-b1be-2ed64e7180e8",
    "archive_snapshot_files": "43fb6cd1-8561-5dcd-a171-4c49c72d710e",
    "archive_piece_refs": "0a0f1caa-0316-57be-9319-60b7be1cd035",
    "archive_file_heads": "4f344c78-16ea-5d2f-b511-7694a057538c",
    "archive_day_aggregates": "eee8577d-1ef1-54db-8012-a32cdb281e34",
    "archive_sync_failures": "561e2798-97a1-5523-bfbd-87f1d99fc612",
    "archive_sync_instances": "a1f627b4-19ec-5355-ae94-43b7458de6c7",
    "archive_snapshot_parts": "0bb028c3-7f09-5019-bc35-23ab3a696033",
    "archive_sync_claims": "ff07cd18-b690-5fbc-a025-581ee102b486",
    "archive_sync_gone": "29970bed-4b34-5288-9069-36fba320dc1c",
    "archive_sync_progress": "97666c54-5093-5a0d-bbb0-36fad8322ded",
    "archive_modified_days": "aa17b86e-783d-5f5b-8168-c70ea0990098",
    "archive_garbage": "16fb8389-0090-5f00-86de-7a45403a624d",
    "archive_legal_holds": "83a2263e-3a9b-599d-8412-978d8ba72b65",
    "archive_legal_hold_cases": "d220c0ab-4b8e-58d9-907c-dbf918b5eddc",
    "archive_day_changes": "6324d7a4-77fc-527c-aed1-0a4a8bb1e973",
    "archive_versions": "d6f4d50b-f450-5bc3-b924-6dc2d4b52288",
    "archive_ledger_queue": "ce475a28-98fd-534a-b1b2-3e5c4ba8050f",
    "archive_ledger_entries": "d032258c-46ee-5bd8-b0b0-4cabe022f14c",
    "archive_ledger_nodes": "54f7acca-2dd7-5b91-9752-af2cc4cfe96c",
    "archive_ledger_head": "138579a0-dc54-585a-8d5d-2913107ad977",
    "archive_ledger_subjects": "33130fef-ac39-5706-bda5-9ca822e8dc78",
    "archive_ledger_checkpoints": "67972ab6-4dff-5a32-afcc-1cf46c0da6b1",
    "archive_snapshot_facts": "95491dbb-2fe5-5f32-92d0-6ae32ef2e098",
    "archive_day_summaries": "13f8a1c1-375a-5a5d-9847-583c0bf061c7",
    "archive_census": "a180ea3c-a464-56bf-89f0-a7fdde476010",
    "archive_month_figures": "2a25c9d1-724f-5cd9-ae7b-31a54c24bd27",
    "archive_checks": "b03b13a6-d05b-5271-a428-d5b527c692b1",
    "archive_ledger_tiles": "8cf1a17f-f932-512e-ae08-561e6d6db5f5",
}

# Per table: CREATE (without its ID), INSERT, SELECT row, DELETE row, DELETE partition.
EXPECTED: dict[str, tuple[str, str, str, str, str]] = {
    "snapshots": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.snapshots "
        "(snapshot text, data blob, PRIMARY KEY (snapshot))",
        "INSERT INTO imixs_archive.snapshots (snapshot, data) VALUES (?, ?) USING TIMESTAMP ?",
        "SELECT snapshot, data FROM imixs_archive.snapshots WHERE snapshot = ?",
        "DELETE FROM imixs_archive.snapshots USING TIMESTAMP ? WHERE snapshot = ?",
        "DELETE FROM imixs_archive.snapshots USING TIMESTAMP ? WHERE snapshot = ?",
    ),
    "snapshots_by_uniqueid": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.snapshots_by_uniqueid "
        "(uniqueid text, snapshot text, PRIMARY KEY (uniqueid, snapshot))",
        "INSERT INTO imixs_archive.snapshots_by_uniqueid (uniqueid, snapshot) VALUES (?, ?) "
        "USING TIMESTAMP ?",
        "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_uniqueid USING TIMESTAMP ? "
        "WHERE uniqueid = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_uniqueid USING TIMESTAMP ? WHERE uniqueid = ?",
    ),
    "snapshots_by_modified": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.snapshots_by_modified "
        "(modified date, snapshot text, PRIMARY KEY (modified, snapshot))",
        "INSERT INTO imixs_archive.snapshots_by_modified (modified, snapshot) VALUES (?, ?) "
        "USING TIMESTAMP ?",
        "SELECT modified, snapshot FROM imixs_archive.snapshots_by_modified "
        "WHERE modified = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_modified USING TIMESTAMP ? "
        "WHERE modified = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_modified USING TIMESTAMP ? WHERE modified = ?",
    ),
    "documents": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.documents "
        "(md5 text, sort_id int, data_id text, PRIMARY KEY (md5, sort_id))",
        "INSERT INTO imixs_archive.documents (md5, sort_id, data_id) VALUES (?, ?, ?) "
        "USING TIMESTAMP ?",
        "SELECT md5, sort_id, data_id FROM imixs_archive.documents WHERE md5 = ? AND sort_id = ?",
        "DELETE FROM imixs_archive.documents USING TIMESTAMP ? WHERE md5 = ? AND sort_id = ?",
        "DELETE FROM imixs_archive.documents USING TIMESTAMP ? WHERE md5 = ?",
    ),
    "documents_data": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.documents_data "
        "(data_id text, data blob, PRIMARY KEY (data_id))",
        "INSERT INTO imixs_archive.documents_data (data_id, data) VALUES (?, ?) USING TIMESTAMP ?",
        "SELECT data_id, data FROM imixs_archive.documents_data WHERE data_id = ?",
        "DELETE FROM imixs_archive.documents_data USING TIMESTAMP ? WHERE data_id = ?",
        "DELETE FROM imixs_archive.documents_data USING TIMESTAMP ? WHERE data_id = ?",
    ),
    "snapshots_by_document": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.snapshots_by_document "
        "(md5 text, snapshot text, PRIMARY KEY (md5, snapshot))",
        "INSERT INTO imixs_archive.snapshots_by_document (md5, snapshot) VALUES (?, ?) "
        "USING TIMESTAMP ?",
        "SELECT md5, snapshot FROM imixs_archive.snapshots_by_document "
        "WHERE md5 = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_document USING TIMESTAMP ? "
        "WHERE md5 = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.snapshots_by_document USING TIMESTAMP ? WHERE md5 = ?",
    ),
    "archive_files": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_files "
        "(md5 text, digest text, size bigint, pieces int, PRIMARY KEY (md5))",
        "INSERT INTO imixs_archive.archive_files (md5, digest, size, pieces) VALUES (?, ?, ?, ?) "
        "USING TIMESTAMP ?",
        "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files WHERE md5 = ?",
        "DELETE FROM imixs_archive.archive_files USING TIMESTAMP ? WHERE md5 = ?",
        "DELETE FROM imixs_archive.archive_files USING TIMESTAMP ? WHERE md5 = ?",
    ),
    "archive_file_cuts": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_file_cuts "
        "(md5 text, digest text, ledger_digest text, PRIMARY KEY (md5))",
        "INSERT INTO imixs_archive.archive_file_cuts (md5, digest, ledger_digest) "
        "VALUES (?, ?, ?) USING TIMESTAMP ?",
        "SELECT md5, digest, ledger_digest FROM imixs_archive.archive_file_cuts WHERE md5 = ?",
        "DELETE FROM imixs_archive.archive_file_cuts USING TIMESTAMP ? WHERE md5 = ?",
        "DELETE FROM imixs_archive.archive_file_cuts USING TIMESTAMP ? WHERE md5 = ?",
    ),
    "archive_snapshot_files": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_files "
        "(snapshot text, name text, md5 text, claimed_md5 text, PRIMARY KEY (snapshot, name))",
        "INSERT INTO imixs_archive.archive_snapshot_files (snapshot, name, md5, claimed_md5) "
        "VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT snapshot, name, md5, claimed_md5 FROM imixs_archive.archive_snapshot_files "
        "WHERE snapshot = ? AND name = ?",
        "DELETE FROM imixs_archive.archive_snapshot_files USING TIMESTAMP ? "
        "WHERE snapshot = ? AND name = ?",
        "DELETE FROM imixs_archive.archive_snapshot_files USING TIMESTAMP ? WHERE snapshot = ?",
    ),
    "archive_piece_refs": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_piece_refs "
        "(data_id text, md5 text, size bigint, PRIMARY KEY (data_id, md5))",
        "INSERT INTO imixs_archive.archive_piece_refs (data_id, md5, size) VALUES (?, ?, ?) "
        "USING TIMESTAMP ?",
        "SELECT data_id, md5, size FROM imixs_archive.archive_piece_refs "
        "WHERE data_id = ? AND md5 = ?",
        "DELETE FROM imixs_archive.archive_piece_refs USING TIMESTAMP ? "
        "WHERE data_id = ? AND md5 = ?",
        "DELETE FROM imixs_archive.archive_piece_refs USING TIMESTAMP ? WHERE data_id = ?",
    ),
    "archive_file_heads": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_file_heads "
        "(head text, md5 text, PRIMARY KEY (head, md5))",
        "INSERT INTO imixs_archive.archive_file_heads (head, md5) VALUES (?, ?) USING TIMESTAMP ?",
        "SELECT head, md5 FROM imixs_archive.archive_file_heads WHERE head = ? AND md5 = ?",
        "DELETE FROM imixs_archive.archive_file_heads USING TIMESTAMP ? WHERE head = ? AND md5 = ?",
        "DELETE FROM imixs_archive.archive_file_heads USING TIMESTAMP ? WHERE head = ?",
    ),
    "archive_garbage": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_garbage "
        "(id text, kind text, since bigint, size bigint, PRIMARY KEY (id, kind))",
        "INSERT INTO imixs_archive.archive_garbage (id, kind, since, size) VALUES (?, ?, ?, ?) "
        "USING TIMESTAMP ?",
        "SELECT id, kind, since, size FROM imixs_archive.archive_garbage WHERE id = ? AND kind = ?",
        "DELETE FROM imixs_archive.archive_garbage USING TIMESTAMP ? WHERE id = ? AND kind = ?",
        "DELETE FROM imixs_archive.archive_garbage USING TIMESTAMP ? WHERE id = ?",
    ),
    "archive_day_aggregates": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_aggregates "
        "(year int, day date, version int, data blob, PRIMARY KEY (year, day))",
        "INSERT INTO imixs_archive.archive_day_aggregates (year, day, version, data) "
        "VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT year, day, version, data FROM imixs_archive.archive_day_aggregates "
        "WHERE year = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_day_aggregates USING TIMESTAMP ? "
        "WHERE year = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_day_aggregates USING TIMESTAMP ? WHERE year = ?",
    ),
    "archive_sync_failures": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_failures "
        "(event_id text, topic text, ref text, status text, attempts int, next_attempt bigint, "
        "first_failed bigint, last_failed bigint, error text, PRIMARY KEY (event_id))",
        "INSERT INTO imixs_archive.archive_sync_failures (" + SYNC_FAILURE_COLS + ") "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT "
        + SYNC_FAILURE_COLS
        + " FROM imixs_archive.archive_sync_failures WHERE event_id = ?",
        "DELETE FROM imixs_archive.archive_sync_failures USING TIMESTAMP ? WHERE event_id = ?",
        "DELETE FROM imixs_archive.archive_sync_failures USING TIMESTAMP ? WHERE event_id = ?",
    ),
    "archive_sync_instances": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_instances "
        "(instance text, started bigint, updated bigint, state text, events bigint, "
        "archived bigint, removed bigint, bytes bigint, failures bigint, retries bigint, "
        "dead_letters bigint, lag_ms bigint, PRIMARY KEY (instance))",
        "INSERT INTO imixs_archive.archive_sync_instances (" + SYNC_INSTANCE_COLS + ") "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT "
        + SYNC_INSTANCE_COLS
        + " FROM imixs_archive.archive_sync_instances WHERE instance = ?",
        "DELETE FROM imixs_archive.archive_sync_instances USING TIMESTAMP ? WHERE instance = ?",
        "DELETE FROM imixs_archive.archive_sync_instances USING TIMESTAMP ? WHERE instance = ?",
    ),
    "archive_snapshot_parts": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_parts "
        "(snapshot text, part int, data blob, PRIMARY KEY (snapshot, part))",
        "INSERT INTO imixs_archive.archive_snapshot_parts (snapshot, part, data) "
        "VALUES (?, ?, ?) USING TIMESTAMP ?",
        "SELECT snapshot, part, data FROM imixs_archive.archive_snapshot_parts "
        "WHERE snapshot = ? AND part = ?",
        "DELETE FROM imixs_archive.archive_snapshot_parts USING TIMESTAMP ? "
        "WHERE snapshot = ? AND part = ?",
        "DELETE FROM imixs_archive.archive_snapshot_parts USING TIMESTAMP ? WHERE snapshot = ?",
    ),
    "archive_modified_days": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_modified_days "
        "(bucket int, day date, PRIMARY KEY (bucket, day))",
        "INSERT INTO imixs_archive.archive_modified_days (bucket, day) VALUES (?, ?) "
        "USING TIMESTAMP ?",
        "SELECT bucket, day FROM imixs_archive.archive_modified_days WHERE bucket = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_modified_days USING TIMESTAMP ? "
        "WHERE bucket = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_modified_days USING TIMESTAMP ? WHERE bucket = ?",
    ),
    "archive_day_changes": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_changes "
        "(year int, day date, writer text, stamp text, PRIMARY KEY (year, day, writer))",
        "INSERT INTO imixs_archive.archive_day_changes (year, day, writer, stamp) "
        "VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT year, day, writer, stamp FROM imixs_archive.archive_day_changes "
        "WHERE year = ? AND day = ? AND writer = ?",
        "DELETE FROM imixs_archive.archive_day_changes USING TIMESTAMP ? "
        "WHERE year = ? AND day = ? AND writer = ?",
        "DELETE FROM imixs_archive.archive_day_changes USING TIMESTAMP ? WHERE year = ?",
    ),
    "archive_versions": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_versions "
        "(name text, version int, written_by text, PRIMARY KEY (name))",
        "INSERT INTO imixs_archive.archive_versions (name, version, written_by) "
        "VALUES (?, ?, ?) USING TIMESTAMP ?",
        "SELECT name, version, written_by FROM imixs_archive.archive_versions WHERE name = ?",
        "DELETE FROM imixs_archive.archive_versions USING TIMESTAMP ? WHERE name = ?",
        "DELETE FROM imixs_archive.archive_versions USING TIMESTAMP ? WHERE name = ?",
    ),
    "archive_sync_claims": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_claims "
        "(event_id text, topic text, ref text, instance text, claimed bigint, "
        "PRIMARY KEY (event_id))",
        "INSERT INTO imixs_archive.archive_sync_claims ("
        + CLAIM_COLS
        + ") VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT " + CLAIM_COLS + " FROM imixs_archive.archive_sync_claims WHERE event_id = ?",
        "DELETE FROM imixs_archive.archive_sync_claims USING TIMESTAMP ? WHERE event_id = ?",
        "DELETE FROM imixs_archive.archive_sync_claims USING TIMESTAMP ? WHERE event_id = ?",
    ),
    "archive_sync_gone": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_gone "
        "(ref text, event_id text, topic text, gone_at bigint, instance text, PRIMARY KEY (ref))",
        "INSERT INTO imixs_archive.archive_sync_gone ("
        + GONE_COLS
        + ") VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT " + GONE_COLS + " FROM imixs_archive.archive_sync_gone WHERE ref = ?",
        "DELETE FROM imixs_archive.archive_sync_gone USING TIMESTAMP ? WHERE ref = ?",
        "DELETE FROM imixs_archive.archive_sync_gone USING TIMESTAMP ? WHERE ref = ?",
    ),
    "archive_sync_progress": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_progress "
        "(name text, point bigint, updated bigint, owner text, note text, PRIMARY KEY (name))",
        "INSERT INTO imixs_archive.archive_sync_progress ("
        + PROGRESS_COLS
        + ") VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT " + PROGRESS_COLS + " FROM imixs_archive.archive_sync_progress WHERE name = ?",
        "DELETE FROM imixs_archive.archive_sync_progress USING TIMESTAMP ? WHERE name = ?",
        "DELETE FROM imixs_archive.archive_sync_progress USING TIMESTAMP ? WHERE name = ?",
    ),
    "archive_legal_holds": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_legal_holds "
        "(uniqueid text, reason text, placed bigint, placed_by text, PRIMARY KEY (uniqueid))",
        "INSERT INTO imixs_archive.archive_legal_holds (uniqueid, reason, placed, placed_by) "
        "VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_holds "
        "WHERE uniqueid = ?",
        "DELETE FROM imixs_archive.archive_legal_holds USING TIMESTAMP ? WHERE uniqueid = ?",
        "DELETE FROM imixs_archive.archive_legal_holds USING TIMESTAMP ? WHERE uniqueid = ?",
    ),
    "archive_legal_hold_cases": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_legal_hold_cases "
        "(uniqueid text, reason text, placed bigint, placed_by text, "
        "PRIMARY KEY (uniqueid, reason))",
        "INSERT INTO imixs_archive.archive_legal_hold_cases (uniqueid, reason, placed, placed_by) "
        "VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_hold_cases "
        "WHERE uniqueid = ? AND reason = ?",
        "DELETE FROM imixs_archive.archive_legal_hold_cases USING TIMESTAMP ? "
        "WHERE uniqueid = ? AND reason = ?",
        "DELETE FROM imixs_archive.archive_legal_hold_cases USING TIMESTAMP ? WHERE uniqueid = ?",
    ),
    "archive_ledger_queue": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_queue (slot"
        " int, subject text, entry_key text, entry text, PRIMARY KEY (slot, subject, entry_key))",
        "INSERT INTO imixs_archive.archive_ledger_queue (slot, subject,"
        " entry_key, entry) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT slot, subject, entry_key, entry FROM"
        " imixs_archive.archive_ledger_queue WHERE slot = ? AND subject = ? AND entry_key = ?",
        "DELETE FROM imixs_archive.archive_ledger_queue USING TIMESTAMP ?"
        " WHERE slot = ? AND subject = ? AND entry_key = ?",
        "DELETE FROM imixs_archive.archive_ledger_queue USING TIMESTAMP ? WHERE slot = ?",
    ),
    "archive_ledger_entries": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_entries"
        " (bucket int, idx bigint, entry text, hash blob, PRIMARY KEY (bucket, idx))",
        "INSERT INTO imixs_archive.archive_ledger_entries (bucket, idx, entry,"
        " hash) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT bucket, idx, entry, hash FROM"
        " imixs_archive.archive_ledger_entries WHERE bucket = ? AND idx = ?",
        "DELETE FROM imixs_archive.archive_ledger_entries USING TIMESTAMP ?"
        " WHERE bucket = ? AND idx = ?",
        "DELETE FROM imixs_archive.archive_ledger_entries USING TIMESTAMP ? WHERE bucket = ?",
    ),
    "archive_ledger_nodes": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_nodes (level"
        " int, bucket int, idx bigint, hash blob, PRIMARY KEY ((level, bucket), idx))",
        "INSERT INTO imixs_archive.archive_ledger_nodes (level, bucket, idx,"
        " hash) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT level, bucket, idx, hash FROM"
        " imixs_archive.archive_ledger_nodes WHERE level = ? AND bucket = ? AND idx = ?",
        "DELETE FROM imixs_archive.archive_ledger_nodes USING TIMESTAMP ?"
        " WHERE level = ? AND bucket = ? AND idx = ?",
        "DELETE FROM imixs_archive.archive_ledger_nodes USING TIMESTAMP ?"
        " WHERE level = ? AND bucket = ?",
    ),
    "archive_ledger_tiles": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_tiles (level int, idx bigint,"
        " width int, hashes blob, PRIMARY KEY ((level, idx), width))",
        "INSERT INTO imixs_archive.archive_ledger_tiles (level, idx, width, hashes)"
        " VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT level, idx, width, hashes FROM imixs_archive.archive_ledger_tiles"
        " WHERE level = ? AND idx = ? AND width = ?",
        "DELETE FROM imixs_archive.archive_ledger_tiles USING TIMESTAMP ?"
        " WHERE level = ? AND idx = ? AND width = ?",
        "DELETE FROM imixs_archive.archive_ledger_tiles USING TIMESTAMP ?"
        " WHERE level = ? AND idx = ?",
    ),
    "archive_checks": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_checks (name"
        " text, state text, PRIMARY KEY (name))",
        "INSERT INTO imixs_archive.archive_checks (name, state) VALUES (?, ?) USING TIMESTAMP ?",
        "SELECT name, state FROM imixs_archive.archive_checks WHERE name = ?",
        "DELETE FROM imixs_archive.archive_checks USING TIMESTAMP ? WHERE name = ?",
        "DELETE FROM imixs_archive.archive_checks USING TIMESTAMP ? WHERE name = ?",
    ),
    "archive_ledger_head": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_head (name"
        " text, state text, PRIMARY KEY (name))",
        "INSERT INTO imixs_archive.archive_ledger_head (name, state) VALUES"
        " (?, ?) USING TIMESTAMP ?",
        "SELECT name, state FROM imixs_archive.archive_ledger_head WHERE name = ?",
        "DELETE FROM imixs_archive.archive_ledger_head USING TIMESTAMP ? WHERE name = ?",
        "DELETE FROM imixs_archive.archive_ledger_head USING TIMESTAMP ? WHERE name = ?",
    ),
    "archive_ledger_subjects": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_subjects"
        " (subject text, idx bigint, kind text, digest text, PRIMARY KEY (subject))",
        "INSERT INTO imixs_archive.archive_ledger_subjects (subject, idx,"
        " kind, digest) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT subject, idx, kind, digest FROM"
        " imixs_archive.archive_ledger_subjects WHERE subject = ?",
        "DELETE FROM imixs_archive.archive_ledger_subjects USING TIMESTAMP ? WHERE subject = ?",
        "DELETE FROM imixs_archive.archive_ledger_subjects USING TIMESTAMP ? WHERE subject = ?",
    ),
    "archive_ledger_checkpoints": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_checkpoints"
        " (year int, size bigint, note text, written bigint, PRIMARY KEY (year, size))",
        "INSERT INTO imixs_archive.archive_ledger_checkpoints (year, size,"
        " note, written) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT year, size, note, written FROM"
        " imixs_archive.archive_ledger_checkpoints WHERE year = ? AND size = ?",
        "DELETE FROM imixs_archive.archive_ledger_checkpoints USING TIMESTAMP"
        " ? WHERE year = ? AND size = ?",
        "DELETE FROM imixs_archive.archive_ledger_checkpoints USING TIMESTAMP ? WHERE year = ?",
    ),
    "archive_snapshot_facts": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_facts"
        " (day date, snapshot text, data blob, PRIMARY KEY (day, snapshot))",
        "INSERT INTO imixs_archive.archive_snapshot_facts (day, snapshot, data)"
        " VALUES (?, ?, ?) USING TIMESTAMP ?",
        "SELECT day, snapshot, data FROM imixs_archive.archive_snapshot_facts"
        " WHERE day = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.archive_snapshot_facts USING TIMESTAMP ?"
        " WHERE day = ? AND snapshot = ?",
        "DELETE FROM imixs_archive.archive_snapshot_facts USING TIMESTAMP ? WHERE day = ?",
    ),
    "archive_day_summaries": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_summaries"
        " (year int, day date, version int, data blob, PRIMARY KEY (year, day))",
        "INSERT INTO imixs_archive.archive_day_summaries (year, day, version, data)"
        " VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
        "SELECT year, day, version, data FROM imixs_archive.archive_day_summaries"
        " WHERE year = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_day_summaries USING TIMESTAMP ?"
        " WHERE year = ? AND day = ?",
        "DELETE FROM imixs_archive.archive_day_summaries USING TIMESTAMP ? WHERE year = ?",
    ),
    "archive_census": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_census"
        " (name text, data blob, PRIMARY KEY (name))",
        "INSERT INTO imixs_archive.archive_census (name, data) VALUES (?, ?) USING TIMESTAMP ?",
        "SELECT name, data FROM imixs_archive.archive_census WHERE name = ?",
        "DELETE FROM imixs_archive.archive_census USING TIMESTAMP ? WHERE name = ?",
        "DELETE FROM imixs_archive.archive_census USING TIMESTAMP ? WHERE name = ?",
    ),
    "archive_month_figures": (
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_month_figures"
        " (zone text, month text, data blob, PRIMARY KEY (zone, month))",
        "INSERT INTO imixs_archive.archive_month_figures (zone, month, data)"
        " VALUES (?, ?, ?) USING TIMESTAMP ?",
        "SELECT zone, month, data FROM imixs_archive.archive_month_figures"
        " WHERE zone = ? AND month = ?",
        "DELETE FROM imixs_archive.archive_month_figures USING TIMESTAMP ?"
        " WHERE zone = ? AND month = ?",
        "DELETE FROM imixs_archive.archive_month_figures USING TIMESTAMP ? WHERE zone = ?",
    ),
}

# Per table: the partition query ascending, and descending after a bound with a limit.
PARTITION: dict[str, tuple[str, str]] = {
    "snapshots": (
        "SELECT snapshot, data FROM imixs_archive.snapshots WHERE snapshot = ?",
        "SELECT snapshot, data FROM imixs_archive.snapshots WHERE snapshot = ? LIMIT ?",
    ),
    "snapshots_by_uniqueid": (
        "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? ORDER BY snapshot ASC",
        "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? AND snapshot < ? ORDER BY snapshot DESC LIMIT ?",
    ),
    "snapshots_by_modified": (
        "SELECT modified, snapshot FROM imixs_archive.snapshots_by_modified "
        "WHERE modified = ? ORDER BY snapshot ASC",
        "SELECT modified, snapshot FROM imixs_archive.snapshots_by_modified "
        "WHERE modified = ? AND snapshot < ? ORDER BY snapshot DESC LIMIT ?",
    ),
    "documents": (
        "SELECT md5, sort_id, data_id FROM imixs_archive.documents "
        "WHERE md5 = ? ORDER BY sort_id ASC",
        "SELECT md5, sort_id, data_id FROM imixs_archive.documents "
        "WHERE md5 = ? AND sort_id < ? ORDER BY sort_id DESC LIMIT ?",
    ),
    "documents_data": (
        "SELECT data_id, data FROM imixs_archive.documents_data WHERE data_id = ?",
        "SELECT data_id, data FROM imixs_archive.documents_data WHERE data_id = ? LIMIT ?",
    ),
    "snapshots_by_document": (
        "SELECT md5, snapshot FROM imixs_archive.snapshots_by_document "
        "WHERE md5 = ? ORDER BY snapshot ASC",
        "SELECT md5, snapshot FROM imixs_archive.snapshots_by_document "
        "WHERE md5 = ? AND snapshot < ? ORDER BY snapshot DESC LIMIT ?",
    ),
    "archive_files": (
        "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files WHERE md5 = ?",
        "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files WHERE md5 = ? LIMIT ?",
    ),
    "archive_file_cuts": (
        "SELECT md5, digest, ledger_digest FROM imixs_archive.archive_file_cuts WHERE md5 = ?",
        "SELECT md5, digest, ledger_digest FROM imixs_archive.archive_file_cuts "
        "WHERE md5 = ? LIMIT ?",
    ),
    "archive_snapshot_files": (
        "SELECT snapshot, name, md5, claimed_md5 FROM imixs_archive.archive_snapshot_files "
        "WHERE snapshot = ? ORDER BY name ASC",
        "SELECT snapshot, name, md5, claimed_md5 FROM imixs_archive.archive_snapshot_files "
        "WHERE snapshot = ? AND name < ? ORDER BY name DESC LIMIT ?",
    ),
    "archive_piece_refs": (
        "SELECT data_id, md5, size FROM imixs_archive.archive_piece_refs "
        "WHERE data_id = ? ORDER BY md5 ASC",
        "SELECT data_id, md5, size FROM imixs_archive.archive_piece_refs "
        "WHERE data_id = ? AND md5 < ? ORDER BY md5 DESC LIMIT ?",
    ),
    "archive_file_heads": (
        "SELECT head, md5 FROM imixs_archive.archive_file_heads WHERE head = ? ORDER BY md5 ASC",
        "SELECT head, md5 FROM imixs_archive.archive_file_heads "
        "WHERE head = ? AND md5 < ? ORDER BY md5 DESC LIMIT ?",
    ),
    "archive_garbage": (
        "SELECT id, kind, since, size FROM imixs_archive.archive_garbage "
        "WHERE id = ? ORDER BY kind ASC",
        "SELECT id, kind, since, size FROM imixs_archive.archive_garbage "
        "WHERE id = ? AND kind < ? ORDER BY kind DESC LIMIT ?",
    ),
    "archive_day_aggregates": (
        "SELECT year, day, version, data FROM imixs_archive.archive_day_aggregates "
        "WHERE year = ? ORDER BY day ASC",
        "SELECT year, day, version, data FROM imixs_archive.archive_day_aggregates "
        "WHERE year = ? AND day < ? ORDER BY day DESC LIMIT ?",
    ),
    "archive_sync_failures": (
        "SELECT "
        + SYNC_FAILURE_COLS
        + " FROM imixs_archive.archive_sync_failures WHERE event_id = ?",
        "SELECT "
        + SYNC_FAILURE_COLS
        + " FROM imixs_archive.archive_sync_failures WHERE event_id = ? LIMIT ?",
    ),
    "archive_sync_instances": (
        "SELECT "
        + SYNC_INSTANCE_COLS
        + " FROM imixs_archive.archive_sync_instances WHERE instance = ?",
        "SELECT "
        + SYNC_INSTANCE_COLS
        + " FROM imixs_archive.archive_sync_instances WHERE instance = ? LIMIT ?",
    ),
    "archive_snapshot_parts": (
        "SELECT snapshot, part, data FROM imixs_archive.archive_snapshot_parts "
        "WHERE snapshot = ? ORDER BY part ASC",
        "SELECT snapshot, part, data FROM imixs_archive.archive_snapshot_parts "
        "WHERE snapshot = ? AND part < ? ORDER BY part DESC LIMIT ?",
    ),
    "archive_modified_days": (
        "SELECT bucket, day FROM imixs_archive.archive_modified_days "
        "WHERE bucket = ? ORDER BY day ASC",
        "SELECT bucket, day FROM imixs_archive.archive_modified_days "
        "WHERE bucket = ? AND day < ? ORDER BY day DESC LIMIT ?",
    ),
    "archive_day_changes": (
        "SELECT year, day, writer, stamp FROM imixs_archive.archive_day_changes "
        "WHERE year = ? ORDER BY day ASC, writer ASC",
        "SELECT year, day, writer, stamp FROM imixs_archive.archive_day_changes "
        "WHERE year = ? AND (day, writer) < (?, ?) ORDER BY day DESC, writer DESC LIMIT ?",
    ),
    "archive_versions": (
        "SELECT name, version, written_by FROM imixs_archive.archive_versions WHERE name = ?",
        "SELECT name, version, written_by FROM imixs_archive.archive_versions "
        "WHERE name = ? LIMIT ?",
    ),
    "archive_sync_claims": (
        "SELECT " + CLAIM_COLS + " FROM imixs_archive.archive_sync_claims WHERE event_id = ?",
        "SELECT "
        + CLAIM_COLS
        + " FROM imixs_archive.archive_sync_claims WHERE event_id = ? LIMIT ?",
    ),
    "archive_sync_gone": (
        "SELECT " + GONE_COLS + " FROM imixs_archive.archive_sync_gone WHERE ref = ?",
        "SELECT " + GONE_COLS + " FROM imixs_archive.archive_sync_gone WHERE ref = ? LIMIT ?",
    ),
    "archive_sync_progress": (
        "SELECT " + PROGRESS_COLS + " FROM imixs_archive.archive_sync_progress WHERE name = ?",
        "SELECT "
        + PROGRESS_COLS
        + " FROM imixs_archive.archive_sync_progress WHERE name = ? LIMIT ?",
    ),
    "archive_legal_holds": (
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_holds "
        "WHERE uniqueid = ?",
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_holds "
        "WHERE uniqueid = ? LIMIT ?",
    ),
    "archive_legal_hold_cases": (
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_hold_cases "
        "WHERE uniqueid = ? ORDER BY reason ASC",
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_hold_cases "
        "WHERE uniqueid = ? AND reason < ? ORDER BY reason DESC LIMIT ?",
    ),
    "archive_ledger_queue": (
        "SELECT slot, subject, entry_key, entry FROM"
        " imixs_archive.archive_ledger_queue WHERE slot = ? ORDER BY subject ASC, entry_key ASC",
        "SELECT slot, subject, entry_key, entry FROM"
        " imixs_archive.archive_ledger_queue WHERE slot = ? AND (subject, entry_key) < (?,"
        " ?) ORDER BY subject DESC, entry_key DESC LIMIT ?",
    ),
    "archive_ledger_entries": (
        "SELECT bucket, idx, entry, hash FROM"
        " imixs_archive.archive_ledger_entries WHERE bucket = ? ORDER BY idx ASC",
        "SELECT bucket, idx, entry, hash FROM"
        " imixs_archive.archive_ledger_entries WHERE bucket = ? AND idx < ? ORDER BY idx"
        " DESC LIMIT ?",
    ),
    "archive_ledger_nodes": (
        "SELECT level, bucket, idx, hash FROM"
        " imixs_archive.archive_ledger_nodes WHERE level = ? AND bucket = ? ORDER BY idx ASC",
        "SELECT level, bucket, idx, hash FROM"
        " imixs_archive.archive_ledger_nodes WHERE level = ? AND bucket = ? AND idx < ?"
        " ORDER BY idx DESC LIMIT ?",
    ),
    "archive_ledger_tiles": (
        "SELECT level, idx, width, hashes FROM imixs_archive.archive_ledger_tiles"
        " WHERE level = ? AND idx = ? ORDER BY width ASC",
        "SELECT level, idx, width, hashes FROM imixs_archive.archive_ledger_tiles"
        " WHERE level = ? AND idx = ? AND width < ? ORDER BY width DESC LIMIT ?",
    ),
    "archive_ledger_head": (
        "SELECT name, state FROM imixs_archive.archive_ledger_head WHERE name = ?",
        "SELECT name, state FROM imixs_archive.archive_ledger_head WHERE name = ? LIMIT ?",
    ),
    "archive_checks": (
        "SELECT name, state FROM imixs_archive.archive_checks WHERE name = ?",
        "SELECT name, state FROM imixs_archive.archive_checks WHERE name = ? LIMIT ?",
    ),
    "archive_ledger_subjects": (
        "SELECT subject, idx, kind, digest FROM"
        " imixs_archive.archive_ledger_subjects WHERE subject = ?",
        "SELECT subject, idx, kind, digest FROM"
        " imixs_archive.archive_ledger_subjects WHERE subject = ? LIMIT ?",
    ),
    "archive_ledger_checkpoints": (
        "SELECT year, size, note, written FROM"
        " imixs_archive.archive_ledger_checkpoints WHERE year = ? ORDER BY size ASC",
        "SELECT year, size, note, written FROM"
        " imixs_archive.archive_ledger_checkpoints WHERE year = ? AND size < ? ORDER BY"
        " size DESC LIMIT ?",
    ),
    "archive_snapshot_facts": (
        "SELECT day, snapshot, data FROM imixs_archive.archive_snapshot_facts"
        " WHERE day = ? ORDER BY snapshot ASC",
        "SELECT day, snapshot, data FROM imixs_archive.archive_snapshot_facts"
        " WHERE day = ? AND snapshot < ? ORDER BY snapshot DESC LIMIT ?",
    ),
    "archive_day_summaries": (
        "SELECT year, day, version, data FROM imixs_archive.archive_day_summaries"
        " WHERE year = ? ORDER BY day ASC",
        "SELECT year, day, version, data FROM imixs_archive.archive_day_summaries"
        " WHERE year = ? AND day < ? ORDER BY day DESC LIMIT ?",
    ),
    "archive_census": (
        "SELECT name, data FROM imixs_archive.archive_census WHERE name = ?",
        "SELECT name, data FROM imixs_archive.archive_census WHERE name = ? LIMIT ?",
    ),
    "archive_month_figures": (
        "SELECT zone, month, data FROM imixs_archive.archive_month_figures"
        " WHERE zone = ? ORDER BY month ASC",
        "SELECT zone, month, data FROM imixs_archive.archive_month_figures"
        " WHERE zone = ? AND month < ? ORDER BY month DESC LIMIT ?",
    ),
}

NAMES = [t.name for t in TABLES]


def test_every_table_has_known_answers() -> None:
    assert set(EXPECTED) == set(NAMES)
    assert set(PARTITION) == set(NAMES)
    assert set(WHOLE_TABLE) == set(NAMES)
    assert set(TABLE_IDS) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_statements_of_every_table(name: str) -> None:
    t = table(name)
    create, insert, select_row, delete_row, delete_partition = EXPECTED[name]
    assert cql.create_table(KS, t) == f"{create} WITH ID = {TABLE_IDS[name]}{_queue(name)}"
    assert cql.insert(KS, t) == insert
    assert cql.select_row(KS, t) == select_row
    assert cql.delete_row(KS, t) == delete_row
    assert cql.delete_partition(KS, t) == delete_partition


@pytest.mark.parametrize("name", NAMES)
def test_partition_queries_of_every_table(name: str) -> None:
    t = table(name)
    ascending, descending_after_limit = PARTITION[name]
    assert cql.select_partition(KS, t) == ascending
    after = len(t.clustering_key)
    assert (
        cql.select_partition(KS, t, descending=True, after=after, limit=True)
        == descending_after_limit
    )


WHOLE_TABLE: dict[str, str] = {
    "snapshots": "SELECT snapshot, data FROM imixs_archive.snapshots",
    "snapshots_by_uniqueid": "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid",
    "snapshots_by_modified": "SELECT modified, snapshot FROM imixs_archive.snapshots_by_modified",
    "documents": "SELECT md5, sort_id, data_id FROM imixs_archive.documents",
    "documents_data": "SELECT data_id, data FROM imixs_archive.documents_data",
    "snapshots_by_document": "SELECT md5, snapshot FROM imixs_archive.snapshots_by_document",
    "archive_files": "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files",
    "archive_file_cuts": "SELECT md5, digest, ledger_digest FROM imixs_archive.archive_file_cuts",
    "archive_snapshot_files": (
        "SELECT snapshot, name, md5, claimed_md5 FROM imixs_archive.archive_snapshot_files"
    ),
    "archive_piece_refs": "SELECT data_id, md5, size FROM imixs_archive.archive_piece_refs",
    "archive_file_heads": "SELECT head, md5 FROM imixs_archive.archive_file_heads",
    "archive_garbage": "SELECT id, kind, since, size FROM imixs_archive.archive_garbage",
    "archive_day_aggregates": (
        "SELECT year, day, version, data FROM imixs_archive.archive_day_aggregates"
    ),
    "archive_sync_failures": "SELECT "
    + SYNC_FAILURE_COLS
    + " FROM imixs_archive.archive_sync_failures",
    "archive_sync_instances": "SELECT "
    + SYNC_INSTANCE_COLS
    + " FROM imixs_archive.archive_sync_instances",
    "archive_snapshot_parts": (
        "SELECT snapshot, part, data FROM imixs_archive.archive_snapshot_parts"
    ),
    "archive_modified_days": "SELECT bucket, day FROM imixs_archive.archive_modified_days",
    "archive_day_changes": (
        "SELECT year, day, writer, stamp FROM imixs_archive.archive_day_changes"
    ),
    "archive_versions": "SELECT name, version, written_by FROM imixs_archive.archive_versions",
    "archive_sync_claims": "SELECT " + CLAIM_COLS + " FROM imixs_archive.archive_sync_claims",
    "archive_sync_gone": "SELECT " + GONE_COLS + " FROM imixs_archive.archive_sync_gone",
    "archive_sync_progress": "SELECT "
    + PROGRESS_COLS
    + " FROM imixs_archive.archive_sync_progress",
    "archive_legal_holds": (
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_holds"
    ),
    "archive_legal_hold_cases": (
        "SELECT uniqueid, reason, placed, placed_by FROM imixs_archive.archive_legal_hold_cases"
    ),
    "archive_ledger_queue": (
        "SELECT slot, subject, entry_key, entry FROM imixs_archive.archive_ledger_queue"
    ),
    "archive_ledger_entries": (
        "SELECT bucket, idx, entry, hash FROM imixs_archive.archive_ledger_entries"
    ),
    "archive_ledger_nodes": (
        "SELECT level, bucket, idx, hash FROM imixs_archive.archive_ledger_nodes"
    ),
    "archive_ledger_tiles": (
        "SELECT level, idx, width, hashes FROM imixs_archive.archive_ledger_tiles"
    ),
    "archive_ledger_head": "SELECT name, state FROM imixs_archive.archive_ledger_head",
    "archive_checks": "SELECT name, state FROM imixs_archive.archive_checks",
    "archive_ledger_subjects": (
        "SELECT subject, idx, kind, digest FROM imixs_archive.archive_ledger_subjects"
    ),
    "archive_ledger_checkpoints": (
        "SELECT year, size, note, written FROM imixs_archive.archive_ledger_checkpoints"
    ),
    "archive_snapshot_facts": (
        "SELECT day, snapshot, data FROM imixs_archive.archive_snapshot_facts"
    ),
    "archive_day_summaries": (
        "SELECT year, day, version, data FROM imixs_archive.archive_day_summaries"
    ),
    "archive_census": "SELECT name, data FROM imixs_archive.archive_census",
    "archive_month_figures": "SELECT zone, month, data FROM imixs_archive.archive_month_figures",
}


@pytest.mark.parametrize("name", NAMES)
def test_whole_table_queries_of_every_table(name: str) -> None:
    t = table(name)
    assert cql.select_all(KS, t) == WHOLE_TABLE[name]
    assert cql.select_all(KS, t, limit=True) == WHOLE_TABLE[name] + " LIMIT ?"


ZSTD = "compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64"


@pytest.mark.parametrize("name", NAMES)
def test_zstd_only_for_tables_of_large_cells(name: str) -> None:
    t = table(name)
    text = cql.create_table(KS, t, zstd=True)
    plain = f"{EXPECTED[name][0]} WITH ID = {TABLE_IDS[name]}"
    if t.holds_pieces:
        assert text == f"{plain} AND {ZSTD}, 'min_compress_ratio': 1.1}}"
    elif t.large_cells:
        assert text == f"{plain} AND {ZSTD}}}"
    else:
        assert text == plain + _queue(name)


QUEUES = {"archive_sync_failures", "archive_sync_claims", "archive_ledger_queue"}
"""Work lists: their tombstones go after 3 hours (gc_grace_seconds)."""


def _queue(name: str) -> str:
    assert table(name).queue == (name in QUEUES)
    return " AND gc_grace_seconds = 10800" if name in QUEUES else ""


def test_pieces_and_snapshot_xml_are_compressed() -> None:
    assert cql.create_table(KS, table("documents_data"), zstd=True) == (
        "CREATE TABLE IF NOT EXISTS imixs_archive.documents_data "
        "(data_id text, data blob, PRIMARY KEY (data_id)) "
        "WITH ID = 4214cce9-0139-5732-b627-c887b1432af3 "
        "AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64, "
        "'min_compress_ratio': 1.1}"
    )
    assert cql.create_table(KS, table("snapshots"), zstd=True).endswith(
        "AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64}"
    )


def test_table_ids_differ_per_keyspace_and_table() -> None:
    ids = {cql.table_id(ks, t) for ks in ("a", "b") for t in TABLES}
    assert len(ids) == 2 * len(TABLES)
    assert cql.table_id("a", TABLES[0]) == cql.table_id("a", TABLES[0])


def test_partition_query_variants() -> None:
    t = table("snapshots_by_uniqueid")
    base = "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid WHERE uniqueid = ?"
    assert cql.select_partition(KS, t, descending=True) == base + " ORDER BY snapshot DESC"
    assert cql.select_partition(KS, t, after=1) == base + " AND snapshot > ? ORDER BY snapshot ASC"
    assert cql.select_partition(KS, t, limit=True) == base + " ORDER BY snapshot ASC LIMIT ?"
    assert (
        cql.select_partition(KS, t, after=1, limit=True)
        == base + " AND snapshot > ? ORDER BY snapshot ASC LIMIT ?"
    )
    assert cql.select_partition(KS, t, ["snapshot"], descending=True, after=1) == (
        "SELECT snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? AND snapshot < ? ORDER BY snapshot DESC"
    )


def test_projection() -> None:
    t = table("archive_files")
    assert cql.select_row(KS, t, ["size", "pieces"]) == (
        "SELECT size, pieces FROM imixs_archive.archive_files WHERE md5 = ?"
    )
    assert cql.select_all(KS, t, ["md5"]) == "SELECT md5 FROM imixs_archive.archive_files"
    with pytest.raises(KeyError):
        cql.select_row(KS, t, ["size; DROP TABLE x"])
    with pytest.raises(ValueError):
        cql.select_all(KS, t, [])


COMPOSITE = Table(
    "composite",
    (
        Column("a", ColumnType.TEXT),
        Column("b", ColumnType.INT),
        Column("c", ColumnType.DATE),
        Column("d", ColumnType.BIGINT),
        Column("v", ColumnType.BLOB),
    ),
    partition_key=("a", "b"),
    clustering_key=("c", "d"),
)


def test_composite_keys() -> None:
    assert cql.create_table("ks", COMPOSITE) == (
        "CREATE TABLE IF NOT EXISTS ks.composite "
        "(a text, b int, c date, d bigint, v blob, PRIMARY KEY ((a, b), c, d)) "
        f"WITH ID = {cql.table_id('ks', COMPOSITE)}"
    )
    assert cql.select_partition("ks", COMPOSITE, after=2, descending=True) == (
        "SELECT a, b, c, d, v FROM ks.composite WHERE a = ? AND b = ? "
        "AND (c, d) < (?, ?) ORDER BY c DESC, d DESC"
    )
    assert cql.select_partition("ks", COMPOSITE, after=1) == (
        "SELECT a, b, c, d, v FROM ks.composite WHERE a = ? AND b = ? "
        "AND c > ? ORDER BY c ASC, d ASC"
    )
    assert cql.delete_partition("ks", COMPOSITE) == (
        "DELETE FROM ks.composite USING TIMESTAMP ? WHERE a = ? AND b = ?"
    )


def test_start_after_needs_a_clustering_key() -> None:
    with pytest.raises(ValueError, match="no clustering key"):
        cql.select_partition(KS, table("snapshots"), after=1)
    with pytest.raises(ValueError, match="more than the clustering key"):
        cql.select_partition(KS, table("documents"), after=2)


# --- keyspace DDL ---------------------------------------------------------------------


def test_create_keyspace_simple_strategy() -> None:
    assert cql.create_keyspace(KS, SIMPLE_1) == (
        "CREATE KEYSPACE IF NOT EXISTS imixs_archive "
        "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    three = cql.Replication(cql.SIMPLE, (("replication_factor", 3),))
    assert cql.create_keyspace("archive", three) == (
        "CREATE KEYSPACE IF NOT EXISTS archive "
        "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"
    )


def test_create_keyspace_network_topology() -> None:
    one_dc = cql.Replication(cql.NETWORK_TOPOLOGY, (("datacenter1", 3),))
    assert cql.create_keyspace(KS, one_dc) == (
        "CREATE KEYSPACE IF NOT EXISTS imixs_archive "
        "WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}"
    )
    two_dc = cql.Replication(cql.NETWORK_TOPOLOGY, (("eu-west-1", 3), ("us_east.2", 2)))
    assert cql.create_keyspace(KS, two_dc) == (
        "CREATE KEYSPACE IF NOT EXISTS imixs_archive WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'eu-west-1': 3, 'us_east.2': 2}"
    )


def test_drop_keyspace() -> None:
    assert cql.drop_keyspace("archive_test_x") == "DROP KEYSPACE IF EXISTS archive_test_x"


@pytest.mark.parametrize(
    ("strategy", "factors"),
    [
        ("LocalStrategy", (("replication_factor", 1),)),
        (cql.SIMPLE, ()),
        (cql.SIMPLE, (("dc1", 1),)),
        (cql.SIMPLE, (("replication_factor", 0),)),
        (cql.SIMPLE, (("replication_factor", 100),)),
        (cql.SIMPLE, (("replication_factor", True),)),
        (cql.SIMPLE, (("replication_factor", "1}; DROP KEYSPACE x; --"),)),
        (cql.NETWORK_TOPOLOGY, (("dc1': 3, 'x", 1),)),
        (cql.NETWORK_TOPOLOGY, (("", 1),)),
        (cql.NETWORK_TOPOLOGY, (("dc 1", 1),)),
    ],
)
def test_replication_refuses_what_cannot_be_written_safely(
    strategy: str, factors: tuple[tuple[str, int], ...]
) -> None:
    with pytest.raises(ValueError):
        cql.Replication(strategy, factors)


# --- identifiers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["imixs_archive", "_x", "archive2", "a" * 48, "archive_test_abcdefghijkl"]
)
def test_safe_identifiers(name: str) -> None:
    assert cql.check_identifier(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "ks; DROP KEYSPACE x",
        "ks;",
        "ks.snapshots",
        "Archive",
        "ks--",
        "ks'",
        'ks"',
        "ks x",
        "ks\n",
        "2archive",
        "a" * 49,
        "select",
        "keyspace",
        "täst",
        "ks/*",
    ],
)
def test_unsafe_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match="not a safe CQL identifier"):
        cql.check_identifier(name)


@pytest.mark.parametrize("keyspace", ["ks; DROP KEYSPACE x", "x WITH", "ks--", "KS"])
def test_no_statement_takes_an_unsafe_keyspace(keyspace: str) -> None:
    t = table("snapshots")
    for make in (
        lambda: cql.create_keyspace(keyspace, SIMPLE_1),
        lambda: cql.drop_keyspace(keyspace),
        lambda: cql.create_table(keyspace, t),
        lambda: cql.insert(keyspace, t),
        lambda: cql.select_row(keyspace, t),
        lambda: cql.select_partition(keyspace, t),
        lambda: cql.select_all(keyspace, t),
        lambda: cql.delete_row(keyspace, t),
        lambda: cql.delete_partition(keyspace, t),
    ):
        with pytest.raises(ValueError):
            make()
