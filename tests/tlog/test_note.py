"""Signed notes and checkpoints: published known answers first, then round trips and refusals.

Known-answer vectors, each cited where it is used:

* Go, golang/mod ``sumdb/note/note_test.go`` (TestNewVerifier, TestNewSigner, TestSign,
  TestVerifierList, TestOpen) and the package documentation in ``sumdb/note/note.go``;
* Go, golang/mod ``sumdb/client_test.go`` (a signed tree head in a comment of
  TestClientFork) and ``sumdb/tlog/note_test.go`` (TestFormatTree, TestParseTree);
* C2SP/C2SP ``signed-note.md`` and ``tlog-checkpoint.md`` (the examples in the specs);
* transparency-dev/formats ``log/note_test.go`` (key pairs) and ``log/checkpoint_test.go``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from imixs_archive.tlog.note import (
    MAX_NOTE_BYTES,
    Checkpoint,
    NoteError,
    OpenedNote,
    Signer,
    UnverifiedNote,
    Verifier,
    generate_signer,
    open_note,
    sign_note,
)

# golang/mod sumdb/note/note_test.go (TestNewSigner, TestNewVerifier, TestSign, TestOpen),
# also the example in the package documentation of sumdb/note/note.go.
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgK"
    "vqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGw"
    "nWLox33WWd1RvMc+QQ=\n"
)
PETER_NOTE = TEXT + "\n" + PETER_SIG

# golang/mod sumdb/client_test.go: testVerifierKey, testSignerKey, and the "new database"
# signed tree head printed in the comment of TestClientFork.
SUMDB_VKEY = "localhost.localdev/sumdb+00000c67+AcTrnkbUA+TU4heY3hkjiSES/DSQniBqIeQ/YppAUtK6"
SUMDB_SKEY = (
    "PRIVATE+KEY+localhost.localdev/sumdb+00000c67+AXu6+oaVaOYuQOFrf1V59JK1owcFlJcHwwXHDfDGxSPk"
)
SUMDB_TREE = "go.sum database tree\n6\nwc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=\n"
SUMDB_NOTE = (
    SUMDB_TREE + "\n— localhost.localdev/sumdb AAAMZ6oRNswlEZ6ZZhxrCvgl1MBy+nusq4JU+TG6Fe2Nih"
    "WLqOzb+y2c2kzRLoCr4tvw9o36ucQEnhc20e4nA4Qc/wc=\n"
)

# C2SP/C2SP tlog-checkpoint.md: the example checkpoint at the top of the spec.
C2SP_CHECKPOINT_BODY = (
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
)
C2SP_CHECKPOINT = (
    C2SP_CHECKPOINT_BODY + "\n— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZni"
    "Mp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
)

CONTROLS = "".join(chr(code) for code in range(0x20) if code != 0x0A)


def key_id(name: str, public_key: bytes) -> int:
    """The spec's key ID, restated here: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    digest = hashlib.sha256(name.encode() + b"\n\x01" + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def seeded(name: str, label: bytes) -> Signer:
    """A signer whose seed is SHA-256(label), so the test is the same on every run."""
    seed = hashlib.sha256(label).digest()
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    return Signer(name, key_id(name, public), seed)


def refused(note: str | bytes, verifiers: list[Verifier]) -> NoteError:
    """The error ``open_note`` raises (it must raise one)."""
    with pytest.raises(NoteError) as caught:
        open_note(note, verifiers)
    return caught.value


PETER = Verifier.from_vkey(PETER_VKEY)
ENOCH = Verifier.from_vkey(ENOCH_VKEY)


# --- Go's published vectors (golang/mod sumdb/note) ---------------------------------------


def test_go_verifier_key_parses_to_its_name_and_hash() -> None:
    assert PETER.name == "PeterNeumann"
    assert PETER.key_hash == 0xC74F20A3
    assert key_id("PeterNeumann", PETER.public_key) == 0xC74F20A3
    assert PETER.vkey() == PETER_VKEY
    assert ENOCH.key_hash == 0xAF0CFE78


def test_go_signer_key_gives_the_published_verifier_key() -> None:
    signer = Signer.from_skey(PETER_SKEY)
    assert (signer.name, signer.key_hash) == ("PeterNeumann", 0xC74F20A3)
    assert signer.vkey() == PETER_VKEY
    assert signer.skey() == PETER_SKEY
    assert signer.verifier() == PETER
    assert "AYEKFALV" not in repr(signer)  # the secret stays out of logs


def test_go_signing_gives_the_published_note() -> None:
    # Ed25519 is deterministic: the same key and text give the same signature (TestSign).
    assert sign_note(TEXT, Signer.from_skey(PETER_SKEY)) == PETER_NOTE


@pytest.mark.parametrize("note", [PETER_NOTE, PETER_NOTE.encode()], ids=["str", "bytes"])
def test_go_published_note_opens(note: str | bytes) -> None:
    assert open_note(note, [PETER]) == OpenedNote(TEXT, ("PeterNeumann",), ())


def test_go_doubly_signed_note() -> None:
    # TestOpen: one of two signatures known, both known, none known.
    note = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    assert open_note(note, [PETER]) == OpenedNote(TEXT, ("PeterNeumann",), ("EnochRoot",))
    assert open_note(note, [ENOCH]) == OpenedNote(TEXT, ("EnochRoot",), ("PeterNeumann",))
    both = open_note(note, [PETER, ENOCH])
    assert both == OpenedNote(TEXT, ("PeterNeumann", "EnochRoot"), ())
    error = refused(note, [])
    assert isinstance(error, UnverifiedNote)
    assert "PeterNeumann+c74f20a3" in str(error) and "EnochRoot+af0cfe78" in str(error)
    other = refused(PETER_NOTE, [ENOCH])
    assert isinstance(other, UnverifiedNote)
    assert "known keys: EnochRoot+af0cfe78" in str(other)


@pytest.mark.parametrize(
    ("key", "parse"),
    [(PETER_VKEY, Verifier.from_vkey), (PETER_SKEY, Signer.from_skey)],
    ids=["vkey", "skey"],
)
def test_go_mangled_keys_are_refused(key: str, parse: Callable[[str], object]) -> None:
    # TestNewVerifier, TestNewSigner: every proper substring, every character plus one.
    parse(key)
    for start in range(len(key)):
        for end in range(start + 1, len(key) + 1):
            if (start, end) != (0, len(key)):
                with pytest.raises(NoteError):
                    parse(key[start:end])
    for index, char in enumerate(key):
        with pytest.raises(NoteError):
            parse(key[:index] + chr(ord(char) + 1) + key[index + 1 :])


def test_go_bad_verifier_keys_with_adjusted_hashes() -> None:
    # TestNewVerifier: a wrong-length key and an unknown algorithm, each with the key hash
    # Go computes for it. Go decodes "…BADKEY==" leniently; the stray bits make it
    # non-canonical base64 here, which is refused before the length is looked at.
    with pytest.raises(NoteError, match="canonical"):
        Verifier.from_vkey(
            "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="
        )
    with pytest.raises(NoteError, match="algorithm"):
        Verifier.from_vkey("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


def test_go_too_many_signatures() -> None:
    # TestOpen: 101 copies of a signature line are refused, known key or not.
    for verifiers in ([PETER], []):
        error = refused(TEXT + "\n" + PETER_SIG * 101, verifiers)
        assert not isinstance(error, UnverifiedNote)
        assert "more than 100" in str(error)
    opened = open_note(TEXT + "\n" + PETER_SIG * 100, [PETER])
    assert opened.verified == ("PeterNeumann",)


def test_go_invalid_signature_by_a_known_key_is_an_error() -> None:
    # TestOpen "Invalid signature": four base64 characters inserted into the signature.
    bad = PETER_SIG[:59] + "ABCD" + PETER_SIG[59:]
    error = refused(TEXT + "\n" + bad, [PETER])
    assert not isinstance(error, UnverifiedNote)
    assert "invalid signature by known key PeterNeumann+c74f20a3" in str(error)


def test_go_duplicate_signatures() -> None:
    # TestOpen "Duplicated verified and unverified signatures": repeats are dropped; the
    # altered Enoch line is a distinct line by a key that is not given.
    enoch_abcd = ENOCH_SIG[:59] + "ABCD" + ENOCH_SIG[59:]
    note = TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + enoch_abcd
    opened = open_note(note, [PETER])
    assert opened == OpenedNote(TEXT, ("PeterNeumann",), ("EnochRoot", "EnochRoot"))


def test_every_signature_line_by_a_known_key_is_checked() -> None:
    # Stricter than Go, which checks only the first line per key: a second, different line
    # by the same known key must verify too.
    bad = PETER_SIG[:59] + "ABCD" + PETER_SIG[59:]
    error = refused(TEXT + "\n" + PETER_SIG + bad, [PETER])
    assert "invalid signature by known key PeterNeumann" in str(error)


@pytest.mark.parametrize(
    ("note", "reason"),
    [
        (TEXT, "no blank line"),
        (TEXT + "\n", "must end with signature lines"),
        (TEXT + "\n" + PETER_SIG[:-1], "must end with signature lines"),
        ("\x01" + TEXT + "\n" + PETER_SIG, "control character U\\+0001"),
        (b"\xff" + PETER_NOTE.encode(), "not valid UTF-8"),
        (
            TEXT + "\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgK"
            "vqfqdngotpRZb6KE6RyyBwJnAM=",
            "must end with signature lines",
        ),
        (
            TEXT + "\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgK"
            "vqfqdngotpRZb6KE6RyyBwJnAM=\n",
            "not standard base64",  # the name ends at the first space
        ),
        (PETER_NOTE + "Unexpected line.\n", "does not start with an em dash"),
    ],
    ids=[
        "no-signatures",
        "blank-only",
        "no-final-newline",
        "control",
        "not-utf8",
        "bad-name",
        "bad-name-newline",
        "trailer",
    ],
)
def test_go_malformed_notes(note: str | bytes, reason: str) -> None:
    # TestOpen "Invalid encoded message syntax": malformed, not merely unverified.
    error = refused(note, [PETER])
    assert not isinstance(error, UnverifiedNote)
    assert re.search(reason, str(error)), str(error)


# --- Other published vectors ---------------------------------------------------------------


def test_c2sp_signed_note_example() -> None:
    # C2SP/C2SP signed-note.md, section "Verifier keys", "Example".
    verifier = Verifier.from_vkey(
        "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
    )
    note = (
        "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6"
        "TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
    )
    opened = open_note(note, [verifier])
    assert opened == OpenedNote("This is an example message.\n", ("example.com/foo",), ())


def test_c2sp_checkpoint_example() -> None:
    # C2SP/C2SP tlog-checkpoint.md: the example at the top (its log key is not published).
    checkpoint = Checkpoint.parse(C2SP_CHECKPOINT_BODY)
    assert checkpoint.origin == "example.com/behind-the-sofa"
    assert checkpoint.size == 20852163
    assert checkpoint.root_hash.hex() == (
        "0ac5186a91863e8e1d90c808014aa89bf5da8e3ee1d9f07630f0378f68f1ab62"
    )
    assert checkpoint.extensions == ()
    assert checkpoint.body() == C2SP_CHECKPOINT_BODY
    error = refused(C2SP_CHECKPOINT, [PETER])
    assert isinstance(error, UnverifiedNote)
    assert "example.com/behind-the-sofa+" in str(error)


def test_go_sumdb_tree_body() -> None:
    # golang/mod sumdb/tlog/note_test.go (TestFormatTree, TestParseTree): the tree of size
    # 123456789012 whose hash is RecordHash("hello world"), the RFC 6962 leaf hash.
    body = "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n"
    checkpoint = Checkpoint.parse(body)
    assert checkpoint.origin == "go.sum database tree"
    assert checkpoint.size == 123456789012
    assert checkpoint.root_hash == hashlib.sha256(b"\x00hello world").digest()
    assert checkpoint.body() == body
    # TestParseTree's bad trees: a hex size, a root hash that is too long.
    for bad in (
        "go.sum database tree\n0xabcdef\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n",
    ):
        with pytest.raises(NoteError):
            Checkpoint.parse(bad)


def test_go_sumdb_signed_tree_head() -> None:
    # golang/mod sumdb/client_test.go: the test server's key pair and a tree head it signed.
    signer = Signer.from_skey(SUMDB_SKEY)
    assert signer.key_hash == 0x00000C67
    assert signer.vkey() == SUMDB_VKEY
    assert sign_note(SUMDB_TREE, signer) == SUMDB_NOTE
    opened = open_note(SUMDB_NOTE, [Verifier.from_vkey(SUMDB_VKEY)])
    assert opened.verified == ("localhost.localdev/sumdb",)
    checkpoint = Checkpoint.parse(opened.text)
    assert (checkpoint.origin, checkpoint.size) == ("go.sum database tree", 6)


@pytest.mark.parametrize(
    ("skey", "vkey"),
    [
        # transparency-dev/formats log/note_test.go: logSK/logVK, known1, known2, unknown.
        (
            "PRIVATE+KEY+Log+2271c621+AdEIq9FLRQni54Wg68T96VJO+iayOaulswav2DUMKgvQ",
            "Log+2271c621+AemuH5ooBpEPcr+W8onrjA1NfuzBVHdezakU81Ekarvs",
        ),
        (
            "PRIVATE+KEY+Known+451c786d+AQPRoE2+Z+Ed1HaHBA9F/FfracvcZ2rDU39kCecMEoci",
            "Known+451c786d+AXAQ0T7lbwuY4ABJ9/MYY9bWV3hmSyOGVt2x42NkmdUH",
        ),
        (
            "PRIVATE+KEY+KnownAgain+4893b26c+ARhZda/l25zjGZswYLDZsLNRzNpmv5wYTN9IoTr1OJ2+",
            "KnownAgain+4893b26c+AQ+LR7BFF/F/dkpIBjBpSvT0crkteizuUkavAoGeaYMj",
        ),
        (
            "PRIVATE+KEY+Unknown+fdbb2e08+Aav2knTC6orbhXX8pMWuNiWgO+Wwk2DB+h1eU2Q1W1nU",
            "Unknown+fdbb2e08+AWgRIYZ+8x1Vl+1Q+sR8zciNHiYI1SdlBjNw+RV0rots",
        ),
    ],
)
def test_formats_key_pairs(skey: str, vkey: str) -> None:
    assert Signer.from_skey(skey).vkey() == vkey
    assert Verifier.from_vkey(vkey) == Signer.from_skey(skey).verifier()


@pytest.mark.parametrize(
    "body",
    [
        # transparency-dev/formats log/checkpoint_test.go, TestUnmarshalLogState's invalid
        # cases: insufficient lines, empty origin, no final newline, size not a number,
        # negative, too large, root not base64.
        "Head\n9944\n",
        "\n9944\ndGhlIHZpZXcgZnJvbSB0aGUgdHJlZSB0b3BzIGlzIGdyZWF0IQ==\n",
        "Log\n123\nYmFuYW5hcw==",
        "Log\nbananas\ndGhlIHZpZXcgZnJvbSB0aGUgdHJlZSB0b3BzIGlzIGdyZWF0IQ==\n",
        "Log\n-34\ndGhlIHZpZXcgZnJvbSB0aGUgdHJlZSB0b3BzIGlzIGdyZWF0IQ==\n",
        "Log\n3438945738945739845734895735\ndGhlIHZpZXcgZnJvbSB0aGUgdHJlZSB0b3BzIGlzIGdyZWF0IQ==\n",
        "Log\n123\nThisIsn'tBase64\n",
        # Its valid cases carry 7- and 37-byte "hashes"; a C2SP root hash has 32 bytes.
        "Log\n123\nYmFuYW5hcw==\n",
        "Banana\n9944\ndGhlIHZpZXcgZnJvbSB0aGUgdHJlZSB0b3BzIGlzIGdyZWF0IQ==\n",
    ],
)
def test_formats_checkpoint_bodies_refused(body: str) -> None:
    with pytest.raises(NoteError):
        Checkpoint.parse(body)


# --- Keys ----------------------------------------------------------------------------------

NAMES = st.text(
    st.characters(codec="utf-8", exclude_characters="+"), min_size=1, max_size=12
).filter(lambda name: not any(char.isspace() or char < " " for char in name))


@settings(max_examples=40, deadline=None)
@given(NAMES)
def test_generated_keys_round_trip(name: str) -> None:
    signer = generate_signer(name)
    assert signer.key_hash == key_id(name, signer.public_key)
    again = Signer.from_skey(signer.skey())
    assert again == signer
    assert again.sign(b"m") == signer.sign(b"m")
    assert Verifier.from_vkey(signer.vkey()) == signer.verifier()
    assert signer.verifier().verify(b"m", signer.sign(b"m"))
    assert not signer.verifier().verify(b"n", signer.sign(b"m"))


def test_two_generated_keys_differ() -> None:
    one, two = generate_signer("log.example"), generate_signer("log.example")
    assert one.seed != two.seed and one.public_key != two.public_key


@pytest.mark.parametrize(
    "name",
    ["", "a+b", "a b", "a\tb", "a\nb", "a\u00a0b", "a\u2003b", "a\u3000b", "a\x01", "\ud800"],
)
def test_invalid_key_names_are_refused(name: str) -> None:
    with pytest.raises(NoteError):
        generate_signer(name)


def _key(name: str, hash_hex: str | None, data: bytes, private: bool = False) -> str:
    """A key text; ``hash_hex`` None means the right hash of ``data`` (algorithm byte and all)."""
    if hash_hex is None:
        hash_hex = hashlib.sha256(name.encode() + b"\n" + data).digest()[:4].hex()
    return ("PRIVATE+KEY+" if private else "") + f"{name}+{hash_hex}+{b64(data)}"


PETER_PUBLIC = b"\x01" + PETER.public_key
PETER_SEED = Signer.from_skey(PETER_SKEY).seed


@pytest.mark.parametrize(
    ("vkey", "reason"),
    [
        (PETER_VKEY.replace("c74f20a3", "C74F20A3"), "lowercase hex"),
        (PETER_VKEY.replace("c74f20a3", "c74f20a"), "lowercase hex"),
        (PETER_VKEY.replace("c74f20a3", "0xc74f20a3"), "lowercase hex"),
        (PETER_VKEY.replace("c74f20a3", "af0cfe78"), "does not match"),
        (PETER_VKEY.replace("/", "_"), "base64"),
        (PETER_VKEY + " ", "base64"),
        ("Peter Neumann+" + PETER_VKEY.split("+", 1)[1], "contains"),
        ("+" + PETER_VKEY.split("+", 1)[1], "empty"),
        ("PeterNeumann+c74f20a3", "not <name>"),
        (_key("PeterNeumann", None, b"\x02" + PETER.public_key), "algorithm"),
        (_key("PeterNeumann", None, PETER_PUBLIC[:-1]), "31 key bytes"),
        (_key("PeterNeumann", None, PETER_PUBLIC + b"\x00"), "33 key bytes"),
        (_key("PeterNeumann", None, b""), "algorithm"),
        (PETER_SKEY, "lowercase hex"),
    ],
)
def test_malformed_verifier_keys(vkey: str, reason: str) -> None:
    with pytest.raises(NoteError, match=reason):
        Verifier.from_vkey(vkey)


@pytest.mark.parametrize(
    ("skey", "reason"),
    [
        (PETER_VKEY, "PRIVATE"),
        (PETER_SKEY.replace("PRIVATE+KEY", "private+key"), "PRIVATE"),
        (PETER_SKEY.replace("c74f20a3", "af0cfe78"), "does not match"),
        (PETER_SKEY.replace("PeterNeumann", "PeterNeumanm"), "does not match"),
        (_key("PeterNeumann", "c74f20a3", b"\x02" + PETER_SEED, True), "algorithm"),
        (_key("PeterNeumann", "c74f20a3", b"\x01" + PETER_SEED[:-1], True), "31 key bytes"),
        (_key("PeterNeumann", "c74f20a3", b"\x01" + PETER_SEED + b"\x00", True), "33 key bytes"),
    ],
)
def test_malformed_signer_keys(skey: str, reason: str) -> None:
    with pytest.raises(NoteError, match=reason):
        Signer.from_skey(skey)


def test_key_objects_check_their_hash() -> None:
    with pytest.raises(NoteError, match="does not match"):
        Verifier("PeterNeumann", 0xC74F20A4, PETER.public_key)
    with pytest.raises(NoteError, match="32 bytes"):
        Verifier("PeterNeumann", 0xC74F20A3, PETER.public_key[:31])
    with pytest.raises(NoteError, match="does not match"):
        Signer("PeterNeumann", 0xAF0CFE78, PETER_SEED)
    with pytest.raises(NoteError, match="32 bytes"):
        Signer("PeterNeumann", 0xC74F20A3, PETER_SEED + b"\x00")


# --- Signing and opening -------------------------------------------------------------------

NOTE_TEXTS = st.text(st.characters(codec="utf-8", exclude_characters=CONTROLS), max_size=200).map(
    lambda text: text + "\n"
)
ALICE = seeded("alice.example/log", b"alice")
BOB = seeded("bob.example/witness", b"bob")


@settings(max_examples=60, deadline=None)
@given(NOTE_TEXTS)
def test_sign_then_open(text: str) -> None:
    note = sign_note(text, ALICE, BOB)
    assert note.startswith(text + "\n— alice.example/log ")
    both = open_note(note, [ALICE.verifier(), BOB.verifier()])
    assert both == OpenedNote(text, (ALICE.name, BOB.name), ())
    assert open_note(note, [BOB.verifier()]) == OpenedNote(text, (BOB.name,), (ALICE.name,))
    assert isinstance(refused(note, [PETER]), UnverifiedNote)


def test_sixteen_signatures_are_accepted() -> None:
    # The spec: verifiers MUST accept at least 16 signatures.
    signers = [seeded(f"witness{i}.example", b"w%d" % i) for i in range(16)]
    opened = open_note(sign_note(TEXT, *signers), [s.verifier() for s in signers])
    assert opened.verified == tuple(s.name for s in signers)


def test_any_changed_text_character_is_refused() -> None:
    for index, char in enumerate(TEXT):
        changed = TEXT[:index] + ("x" if char != "x" else "y") + TEXT[index + 1 :]
        error = refused(changed + "\n" + PETER_SIG, [PETER])
        assert not isinstance(error, UnverifiedNote), index  # a known key, a bad signature


def test_any_changed_signature_character_is_refused() -> None:
    # The base64 holds the 4-byte key hash (characters 0-4 and part of 5), then the
    # signature: a changed hash makes the key unknown, a changed signature fails it.
    start = PETER_NOTE.rindex(" ") + 1
    for index in range(start, len(PETER_NOTE) - 1):
        char = PETER_NOTE[index]
        changed = PETER_NOTE[:index] + ("A" if char != "A" else "B") + PETER_NOTE[index + 1 :]
        error = refused(changed, [PETER])
        if index - start < 5:
            assert isinstance(error, UnverifiedNote), index
        elif index - start > 5:
            assert not isinstance(error, UnverifiedNote), index


def test_changed_key_name_is_unknown() -> None:
    changed = PETER_NOTE.replace("— PeterNeumann", "— PeterNeumanm")
    error = refused(changed, [PETER])
    assert isinstance(error, UnverifiedNote)
    assert "PeterNeumanm+c74f20a3" in str(error)
    assert "known keys: PeterNeumann+c74f20a3" in str(error)


def test_another_key_with_the_same_name_is_refused() -> None:
    impostor = seeded("PeterNeumann", b"impostor")
    assert impostor.key_hash != PETER.key_hash
    assert isinstance(refused(sign_note(TEXT, impostor), [PETER]), UnverifiedNote)
    # Claiming Peter's key hash with the impostor's signature is a bad signature.
    claimed = PETER.key_hash.to_bytes(4, "big") + impostor.sign(TEXT.encode())
    forged = f"— PeterNeumann {b64(claimed)}\n"
    error = refused(TEXT + "\n" + forged, [PETER])
    assert "invalid signature by known key PeterNeumann" in str(error)


def test_two_keys_of_one_name_are_reported_once() -> None:
    # Key rotation: the old and the new key of a log both sign, both are given.
    new = seeded("PeterNeumann", b"impostor")
    note = sign_note(TEXT, Signer.from_skey(PETER_SKEY), new)
    assert open_note(note, [PETER, new.verifier()]).verified == ("PeterNeumann",)
    assert open_note(note, [new.verifier()]).unknown == ("PeterNeumann",)


def test_signatures_of_the_wrong_length_do_not_verify() -> None:
    signature = Signer.from_skey(PETER_SKEY).sign(b"m")
    assert PETER.verify(b"m", signature)
    assert not PETER.verify(b"m", signature[:63])
    assert not PETER.verify(b"m", signature + b"\x00")


def test_given_keys_sharing_name_and_hash_are_ambiguous() -> None:
    # Seeds SHA-256(b"seed41338") and SHA-256(b"seed53209") for this name collide on their
    # 32-bit key hash (found by a birthday search when this test was written).
    one = seeded("collide.example", b"seed41338")
    two = seeded("collide.example", b"seed53209")
    assert one.key_hash == two.key_hash == 0x5C6BDEBF and one.public_key != two.public_key
    note = sign_note(TEXT, one)
    assert open_note(note, [one.verifier(), one.verifier()]).verified == ("collide.example",)
    with pytest.raises(NoteError, match="ambiguous"):
        open_note(note, [one.verifier(), two.verifier()])


@pytest.mark.parametrize(
    "text",
    ["", "abc", "a\x01\n", "a\rb\n", "\ud800\n"],
    ids=["empty", "no-newline", "ctl", "cr", "surrogate"],
)
def test_sign_note_refuses_malformed_text(text: str) -> None:
    with pytest.raises(NoteError):
        sign_note(text, ALICE)


def test_sign_note_refuses_no_or_repeated_signers() -> None:
    with pytest.raises(NoteError, match="at least one"):
        sign_note(TEXT)
    with pytest.raises(NoteError, match="twice"):
        sign_note(TEXT, ALICE, ALICE)


@pytest.mark.parametrize(
    ("note", "reason"),
    [
        (PETER_NOTE.replace("\n", "\r\n"), "control character U\\+000D"),
        ("\ud800" + PETER_NOTE, "not valid UTF-8"),
        (PETER_NOTE.encode()[:-3] + b"\xc0\x80\n", "not valid UTF-8"),  # overlong NUL
        (("x" * MAX_NOTE_BYTES + "\n" + PETER_NOTE).encode(), "larger than"),
        ("x" * MAX_NOTE_BYTES + "\n" + PETER_NOTE, "larger than"),
        ("é" * (MAX_NOTE_BYTES // 2) + "\n" + PETER_NOTE, "larger than"),  # 2 bytes each
        (TEXT + "\n—  PeterNeumann AAAA\n", "signature key name is empty"),
        (TEXT + "\n— PeterNeumann AAAA\n", "too short"),  # a key hash, no signature
        (TEXT + "\n— PeterNeumann\n", "too short"),
    ],
)
def test_open_note_refuses_bad_encodings_and_sizes(note: str | bytes, reason: str) -> None:
    error = refused(note, [PETER])
    assert not isinstance(error, UnverifiedNote)
    assert re.search(reason, str(error)), str(error)


def test_notes_up_to_the_size_limit() -> None:
    big = sign_note("x" * (MAX_NOTE_BYTES - 200) + "\n", ALICE)
    assert open_note(big, [ALICE.verifier()]).verified == (ALICE.name,)
    with pytest.raises(NoteError, match="exceed"):
        sign_note("x" * (MAX_NOTE_BYTES - 100) + "\n", ALICE)


def test_sign_note_refuses_more_than_a_hundred_signers() -> None:
    signers = [seeded(f"w{i}.example", b"w%d" % i) for i in range(101)]
    opened = open_note(sign_note(TEXT, *signers[:100]), [signers[0].verifier()])
    assert opened.verified == ("w0.example",) and len(opened.unknown) == 99
    with pytest.raises(NoteError, match="at most 100"):
        sign_note(TEXT, *signers)


# --- Checkpoints ---------------------------------------------------------------------------

LINES = st.text(st.characters(codec="utf-8", exclude_characters=CONTROLS + "\n"), min_size=1)


@settings(max_examples=100, deadline=None)
@given(
    LINES,
    st.integers(0, 2**64 - 1),
    st.binary(min_size=32, max_size=32),
    st.lists(LINES, max_size=3).map(tuple),
)
def test_checkpoint_round_trip(
    origin: str, size: int, root: bytes, extensions: tuple[str, ...]
) -> None:
    checkpoint = Checkpoint(origin, size, root, extensions)
    body = checkpoint.body()
    assert body == f"{origin}\n{size}\n{b64(root)}\n" + "".join(e + "\n" for e in extensions)
    assert Checkpoint.parse(body) == checkpoint


ROOT = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="
ROOT_BYTES = base64.b64decode(ROOT)


@pytest.mark.parametrize(
    "body",
    [
        f"log\n007\n{ROOT}\n",
        f"log\n00\n{ROOT}\n",
        f"log\n-1\n{ROOT}\n",
        f"log\n+5\n{ROOT}\n",
        f"log\n 5\n{ROOT}\n",
        f"log\n5 \n{ROOT}\n",
        f"log\n1_000\n{ROOT}\n",
        f"log\n1e3\n{ROOT}\n",
        f"log\n\u0663\n{ROOT}\n",
        f"log\n\n{ROOT}\n",
        f"log\n{2**64}\n{ROOT}\n",
        f"log\n{'9' * 5000}\n{ROOT}\n",
        f"log\n5\n{b64(bytes(31))}\n",
        f"log\n5\n{b64(bytes(33))}\n",
        f"log\n5\n{ROOT.replace('/', '_')}\n",
        f"log\n5\n{ROOT.rstrip('=')}\n",
        f"log\n5\n{ROOT[:-2]}J=\n",
        "log\n5\n\n",
        f"\n5\n{ROOT}\n",
        f"log\n5\n{ROOT}",
        f"log\n5\n{ROOT}\n\n",
        f"log\n5\n{ROOT}\next\n\n",
        "log\n5\n",
        "",
        f"l\tog\n5\n{ROOT}\n",
        f"log\r\n5\r\n{ROOT}\r\n",
    ],
)
def test_malformed_checkpoint_bodies(body: str) -> None:
    with pytest.raises(NoteError):
        Checkpoint.parse(body)


def test_checkpoint_limits_and_fields() -> None:
    largest = Checkpoint("log", 2**64 - 1, ROOT_BYTES, ("ext one",))
    assert Checkpoint.parse(largest.body()) == largest
    assert Checkpoint.parse(f"log\n0\n{ROOT}\n").size == 0


@pytest.mark.parametrize(
    ("origin", "size", "root", "extensions"),
    [
        ("", 1, ROOT_BYTES, ()),
        ("a\nb", 1, ROOT_BYTES, ()),
        ("log", -1, ROOT_BYTES, ()),
        ("log", 2**64, ROOT_BYTES, ()),
        ("log", True, ROOT_BYTES, ()),
        ("log", 1, ROOT_BYTES[:31], ()),
        ("log", 1, ROOT_BYTES, ("",)),
        ("log", 1, ROOT_BYTES, ("a\nb",)),
        ("log", 1, ROOT_BYTES, ("a\x00b",)),
    ],
)
def test_malformed_checkpoints_are_not_built(
    origin: str, size: int, root: bytes, extensions: tuple[str, ...]
) -> None:
    with pytest.raises(NoteError):
        Checkpoint(origin, size, root, extensions)
