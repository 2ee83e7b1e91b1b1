"""Credentials for a Flower deployment that lets in only its own nodes.

``make_credentials(folder, n_nodes)`` (or ``python -m fl_oracle.experiments.flower.certs DIR
--nodes N``) writes what flwr 1.42 needs for TLS and CLI-managed SuperNode authentication:

* ``ca.crt`` / ``ca.key`` — a certificate authority (EC P-384, self-signed). ``ca.crt`` goes to
  the SuperLink (``--ssl-ca-certfile``), to every SuperNode (``--root-certificates``) and to the
  ``[superlink.<name>]`` entry of ``$FLWR_HOME/config.toml`` (``root-certificates``); ``ca.key``
  stays with whoever signs certificates.
* ``server.pem`` / ``server.key`` — the SuperLink's certificate, signed by the CA, for ``host``
  (subjectAltName: ``host``, ``127.0.0.1`` and ``localhost``; the SuperLink's ServerApp process
  reaches its Runtime API on 127.0.0.1), for ``--ssl-certfile`` / ``--ssl-keyfile``.
* ``supernode-<i>.key`` / ``supernode-<i>.pub`` — one EC P-384 key pair per SuperNode, in the
  OpenSSH formats Flower reads: the private key for ``flower-supernode
  --auth-supernode-private-key``, the public key (``ecdsa-sha2-nistp384 ...``) for ``flwr
  supernode register`` on the SuperLink's side. A node whose key is not registered is refused by
  a SuperLink started with ``--enable-supernode-auth``.

The keys are made with the ``cryptography`` package (a dependency of flwr) or, without it, with
the ``openssl`` and ``ssh-keygen`` binaries. Private keys are written readable by their owner
only. The returned dict maps each file name to its path.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["BACKENDS", "make_credentials", "check_request", "main"]

BACKENDS = ("cryptography", "openssl")
CA_NAME = "fedsel Flower CA"
# X.509 validity ends at 9999-12-31 (GeneralizedTime's last day): --days beyond it is refused
LAST_DAY = datetime.datetime(9999, 12, 31, tzinfo=datetime.UTC)
# a DNS name: dot-separated labels of letters, digits and hyphens, at most 63 characters each
# and 253 in all (RFC 1123)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?")


def _default_backend() -> str:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return "openssl"
    return "cryptography"


def _san_entries(host: str) -> tuple[list[str], list[str]]:
    """(IP addresses, DNS names) of the server certificate: host, 127.0.0.1 and localhost."""
    ips, names = ["127.0.0.1"], ["localhost"]
    try:
        ip = str(ipaddress.ip_address(host))
    except ValueError:
        if host not in names:
            names.insert(0, host)
    else:
        if ip not in ips:
            ips.insert(0, ip)
    return ips, names


def _write(path: Path, data: bytes, *, private: bool = False) -> Path:
    path.write_bytes(data)
    if private:
        os.chmod(path, 0o600)
    return path


def _names(n_nodes: int) -> list[str]:
    return ["ca.crt", "ca.key", "server.pem", "server.key"] + [
        f"supernode-{i}{ext}" for i in range(n_nodes) for ext in (".key", ".pub")
    ]


def _with_cryptography(folder: Path, n_nodes: int, host: str, days: int) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    pkcs8 = {"encoding": serialization.Encoding.PEM,
             "format": serialization.PrivateFormat.PKCS8,
             "encryption_algorithm": serialization.NoEncryption()}  # fmt: skip

    def usage(**on: bool) -> x509.KeyUsage:
        flags = ["digital_signature", "content_commitment", "key_encipherment",
                 "data_encipherment", "key_agreement", "key_cert_sign", "crl_sign",
                 "encipher_only", "decipher_only"]  # fmt: skip
        return x509.KeyUsage(**{f: on.get(f, False) for f in flags})

    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA384())
    )
    _write(folder / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(folder / "ca.key", ca_key.private_bytes(**pkcs8), private=True)

    ips, names = _san_entries(host)
    san = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    san += [x509.DNSName(name) for name in names]
    server_key = ec.generate_private_key(ec.SECP384R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _common_name(host))]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA384())
    )
    _write(folder / "server.pem", server_cert.public_bytes(serialization.Encoding.PEM))
    _write(folder / "server.key", server_key.private_bytes(**pkcs8), private=True)

    for i in range(n_nodes):
        key = ec.generate_private_key(ec.SECP384R1())
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        _write(folder / f"supernode-{i}.key", private, private=True)
        _write(folder / f"supernode-{i}.pub", public + f" supernode-{i}\n".encode())


def _with_openssl(folder: Path, n_nodes: int, host: str, days: int) -> None:
    openssl, ssh_keygen = shutil.which("openssl"), shutil.which("ssh-keygen")
    if openssl is None or (n_nodes and ssh_keygen is None):
        raise RuntimeError(
            "without the cryptography package, making credentials needs the openssl binary "
            "(and ssh-keygen for the SuperNodes' keys)"
        )

    def sh(*args: str) -> None:
        subprocess.run(args, check=True, capture_output=True)

    ec384 = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp384r1", "-nodes")
    ca_crt, ca_key = folder / "ca.crt", folder / "ca.key"
    sh(openssl, "req", "-x509", *ec384, "-sha384", "-keyout", str(ca_key), "-out", str(ca_crt),
       "-days", str(days), "-subj", f"/CN={CA_NAME}",
       "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
       "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    ips, names = _san_entries(host)
    san = ",".join([f"IP:{ip}" for ip in ips] + [f"DNS:{name}" for name in names])
    with tempfile.TemporaryDirectory() as tmp:
        csr, ext = Path(tmp) / "server.csr", Path(tmp) / "server.ext"
        ext.write_text(
            f"subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            "authorityKeyIdentifier=keyid\n"
        )
        sh(openssl, "req", "-new", *ec384, "-keyout", str(folder / "server.key"),
           "-out", str(csr), "-subj", f"/CN={_common_name(host)}")  # fmt: skip
        sh(openssl, "x509", "-req", "-sha384", "-in", str(csr), "-CA", str(ca_crt),
           "-CAkey", str(ca_key), "-set_serial", f"0x{secrets.token_hex(16)}",
           "-days", str(days), "-extfile", str(ext), "-out", str(folder / "server.pem"))  # fmt: skip
    for i in range(n_nodes):
        key = folder / f"supernode-{i}.key"
        key.unlink(missing_ok=True)  # ssh-keygen asks before overwriting
        Path(f"{key}.pub").unlink(missing_ok=True)
        sh(ssh_keygen, "-q", "-t", "ecdsa", "-b", "384", "-N", "", "-C", f"supernode-{i}",
           "-f", str(key))  # fmt: skip
        Path(f"{key}.pub").replace(folder / f"supernode-{i}.pub")
    for name in ("ca.key", "server.key"):
        os.chmod(folder / name, 0o600)


def check_request(folder: str | os.PathLike, n_nodes: int, host: str, days: int) -> Path:
    """Refuse, before any key is made, what cannot become a deployment's credentials
    (ValueError in one line naming the value): ``n_nodes`` an integer in 0..the simulator's
    :data:`~fl_oracle.sim.config.MAX_CLIENTS` (one node a client), ``days`` from 1 to
    X.509's last day, ``host`` an IP address or a DNS name, ``folder`` a folder or a path
    that can become one (not a file, not under one). Returns the folder as a Path."""
    from fl_oracle.sim.config import MAX_CLIENTS

    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or not 0 <= n_nodes <= MAX_CLIENTS:
        raise ValueError(f"--nodes {n_nodes!r} must be an integer from 0 to {MAX_CLIENTS:,}")
    left = (LAST_DAY - datetime.datetime.now(datetime.UTC)).days
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= left:
        raise ValueError(
            f"--days {days!r} must be an integer from 1 to {left:,} (certificates end by "
            f"{LAST_DAY:%Y-%m-%d})"
        )
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not isinstance(host, str) or not _DNS.fullmatch(host):
            raise ValueError(
                f"--host {host!r} must be the SuperLink's IP address or DNS name (letters, "
                "digits, hyphens and dots)"
            ) from None
    out = Path(folder)
    if not str(folder).strip():
        raise ValueError("the output folder is empty; name one")
    if out.exists() and not out.is_dir():
        raise ValueError(f"the output folder {out} is a file")
    for parent in out.parents:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"the output folder {out} lies under the file {parent}")
    return out


def _common_name(host: str) -> str:
    """The certificate's CN: the host where it fits X.509's 64 characters (the subjectAltName
    names it in full either way)."""
    return host if len(host) <= 64 else host[:64]


def make_credentials(
    folder: str | os.PathLike,
    n_nodes: int,
    host: str = "127.0.0.1",
    *,
    days: int = 365,
    backend: str | None = None,
) -> dict[str, Path]:
    """Write a CA, the SuperLink's certificate for ``host`` and ``n_nodes`` SuperNode key pairs
    into ``folder`` (created if missing; files of the same names are replaced).

    The request is checked first (:func:`check_request`); the files are made in a temporary
    folder inside ``folder`` and moved in only once all of them exist, so a failure (a
    read-only folder, a missing binary) leaves the folder as it was.

    Returns ``{file name: path}``: ``ca.crt``, ``ca.key``, ``server.pem``, ``server.key`` and
    ``supernode-<i>.key`` / ``supernode-<i>.pub`` for i in 0..n_nodes-1. ``backend`` is
    ``"cryptography"`` (the default when the package is installed) or ``"openssl"``.
    """
    out = check_request(folder, n_nodes, host, days)
    backend = backend or _default_backend()
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    out.mkdir(parents=True, exist_ok=True)
    make = _with_cryptography if backend == "cryptography" else _with_openssl
    work = Path(tempfile.mkdtemp(prefix=".credentials-", dir=out))
    try:
        make(work, n_nodes, host, days)
        for name in _names(n_nodes):
            os.replace(work / name, out / name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {name: out / name for name in _names(n_nodes)}


class _Parser(argparse.ArgumentParser):
    """argparse with fedsel's convention: a usage error is one line on stderr, exit code 2."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    """The command line: the files' paths on stdout; a bad request, an unwritable folder or a
    failing key tool is one line on stderr and exit code 2 (nothing half-written)."""
    parser = _Parser(
        prog="python -m fl_oracle.experiments.flower.certs",
        description="Make a CA, a SuperLink TLS certificate and SuperNode key pairs for a Flower "
        "deployment with TLS and SuperNode authentication.",
    )
    parser.add_argument("folder", help="where the files are written")
    parser.add_argument("--nodes", type=int, required=True, help="SuperNode key pairs to make")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the SuperLink's address as SuperNodes reach it (IP or DNS name)")  # fmt: skip
    parser.add_argument("--days", type=int, default=365, help="certificate validity")
    parser.add_argument("--backend", choices=BACKENDS, default=None)
    args = parser.parse_args(argv)
    try:
        files = make_credentials(args.folder, args.nodes, args.host, days=args.days,
                                 backend=args.backend)  # fmt: skip
    except (ValueError, OSError, RuntimeError, subprocess.SubprocessError) as exc:
        if isinstance(exc, OSError) and exc.filename:
            why = f"{exc.strerror or 'cannot write'}: {exc.filename}"
        elif isinstance(exc, subprocess.CalledProcessError):
            tail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
            why = f"{Path(str(exc.cmd[0])).name} failed: {tail[-1] if tail else exc}"
        else:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        parser.error(why)
    for name, path in files.items():
        print(f"{name:<20} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
