"""A fresh self-signed certificate for a TLS server of a test on loopback."""

from __future__ import annotations

import datetime as dt
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed_pem(
    common_name: str,
    dns_names: tuple[str, ...] = (),
    addresses: tuple[str, ...] = ("127.0.0.1",),
    *,
    expired: bool = False,
) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) of a CA certificate for the IP ``addresses`` and
    the DNS ``dns_names``, valid from five minutes ago for a day (``expired``: for a day
    that ended an hour ago)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC) - (dt.timedelta(days=1) if expired else dt.timedelta())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + (dt.timedelta(hours=23) if expired else dt.timedelta(days=1)))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in addresses),
                    *(x509.DNSName(dns) for dns in dns_names),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
