"""Certificates for a test's own HTTPS server on loopback: self-signed, or issued by a CA of the
test's own as a proxy that inspects TLS issues them."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(tmp_path: Path, name: str) -> tuple[Path, ssl.SSLContext]:
    """A certificate for `name` (a DNS name or an IP address), and a server context with it."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(name)
    certificate = (
        _for(name, subject, subject, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _served(tmp_path, name, certificate, key, certificate)


def issued(tmp_path: Path, name: str) -> tuple[Path, ssl.SSLContext]:
    """A CA's certificate, and a server context with a certificate it issued for `name`: what
    a client must be told to trust (verifiers that follow the web's rules refuse a CA's own
    certificate presented as a server's)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{name} test CA")
    ca = (
        _for(None, ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        _for(name, _name(name), ca_name, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _served(tmp_path, name, certificate, key, ca)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _for(
    name: str | None, subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    """A day's certificate of `subject` by `issuer`, for `name` (a DNS name or an IP address)."""
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
    )
    if name is None:
        return builder
    try:
        alternative: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        alternative = x509.DNSName(name)
    return builder.add_extension(x509.SubjectAlternativeName([alternative]), critical=False)


def _served(
    tmp_path: Path,
    name: str,
    certificate: x509.Certificate,
    key: ec.EllipticCurvePrivateKey,
    trusted: x509.Certificate,
) -> tuple[Path, ssl.SSLContext]:
    """The certificate a client must trust, written to a file, and a server context that
    presents `certificate` with `key`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    if trusted is certificate:
        return cert_file, context
    ca_file = tmp_path / f"{name}-ca.crt"
    ca_file.write_bytes(trusted.public_bytes(serialization.Encoding.PEM))
    return ca_file, context
