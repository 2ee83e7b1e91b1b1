"""The credentials of a Flower deployment with TLS and SuperNode authentication
(fl_oracle/experiments/flower/certs.py): a CA, the SuperLink's certificate signed by it for
127.0.0.1, SuperNode key pairs in the OpenSSH formats flwr reads — made with the cryptography
package or with the openssl and ssh-keygen binaries."""

from __future__ import annotations

import ipaddress
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fl_oracle.experiments.flower.certs import make_credentials

pytest.importorskip("cryptography")
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

BACKENDS = [
    "cryptography",
    pytest.param("openssl", marks=pytest.mark.skipif(
        not (shutil.which("openssl") and shutil.which("ssh-keygen")),
        reason="needs the openssl and ssh-keygen binaries")),
]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_server_certificate_verifies_against_the_ca_and_the_keys_load(tmp_path, backend):
    files = make_credentials(tmp_path / "creds", n_nodes=2, backend=backend)
    assert sorted(files) == sorted(["ca.crt", "ca.key", "server.pem", "server.key"]
                                   + [f"supernode-{i}.{e}" for i in (0, 1) for e in ("key", "pub")])  # fmt: skip
    assert all(p.is_file() and p.parent == tmp_path / "creds" for p in files.values())

    ca = x509.load_pem_x509_certificate(files["ca.crt"].read_bytes())
    server = x509.load_pem_x509_certificate(files["server.pem"].read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    server.verify_directly_issued_by(ca)  # raises when the CA did not sign it
    ca.verify_directly_issued_by(ca)  # self-signed
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
    assert "localhost" in san.get_values_for_type(x509.DNSName)

    ca_key = serialization.load_pem_private_key(files["ca.key"].read_bytes(), None)
    server_key = serialization.load_pem_private_key(files["server.key"].read_bytes(), None)
    assert ca_key.public_key() == ca.public_key()
    assert server_key.public_key() == server.public_key()
    # the SuperNodes' keys as flwr reads them: OpenSSH private key (flower-supernode
    # --auth-supernode-private-key), OpenSSH public key (flwr supernode register), NIST P-384
    for i in (0, 1):
        private = serialization.load_ssh_private_key(files[f"supernode-{i}.key"].read_bytes(), None)
        public = serialization.load_ssh_public_key(files[f"supernode-{i}.pub"].read_bytes())
        assert isinstance(private, ec.EllipticCurvePrivateKey)
        assert isinstance(private.curve, ec.SECP384R1)
        assert private.public_key() == public
    assert files["supernode-0.pub"].read_bytes() != files["supernode-1.pub"].read_bytes()
    for name in ("ca.key", "server.key", "supernode-0.key"):  # private keys: owner only
        assert stat.S_IMODE(files[name].stat().st_mode) == 0o600, name


def test_flwr_accepts_the_node_keys(tmp_path):
    register = pytest.importorskip("flwr.cli.supernode.register")
    files = make_credentials(tmp_path, n_nodes=1)
    assert register.try_load_public_key(files["supernode-0.pub"])  # as `flwr supernode register`


def test_another_host_gets_its_own_san_and_the_command_line_writes_the_files(tmp_path):
    files = make_credentials(tmp_path / "a", n_nodes=0, host="10.1.2.3")
    assert not any(n.startswith("supernode") for n in files)
    server = x509.load_pem_x509_certificate(files["server.pem"].read_bytes())
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"10.1.2.3", "127.0.0.1"}
    files = make_credentials(tmp_path / "b", n_nodes=0, host="link.example.org")
    server = x509.load_pem_x509_certificate(files["server.pem"].read_bytes())
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"link.example.org", "localhost"}

    done = subprocess.run(
        [sys.executable, "-m", "fl_oracle.experiments.flower.certs", str(tmp_path / "c"),
         "--nodes", "3"], capture_output=True, text=True, timeout=60, check=True, cwd=ROOT,
    )  # fmt: skip
    assert "supernode-2.pub" in done.stdout
    assert (tmp_path / "c" / "supernode-2.key").is_file()
    with pytest.raises(ValueError, match="backend"):
        make_credentials(tmp_path / "d", n_nodes=1, backend="gnutls")


# ------------------------------------------------------------ the project's conventions
def _main(argv, capsys) -> tuple[int, str, str]:
    from fl_oracle.experiments.flower.certs import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _refused(code: int, err: str, needle: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("python -m fl_oracle.experiments.flower.certs: error: "), err
    assert needle in lines[0] and "Traceback" not in err, (needle, lines[0])


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--nodes", "-1"], "--nodes -1 must be an integer from 0"),
     (["--nodes", "-100"], "--nodes -100"),
     (["--nodes", "abc"], "invalid int value"),
     (["--nodes", "100000000000"], "--nodes 100000000000"),
     (["--nodes", "1", "--days", "0"], "--days 0 must be"),
     (["--nodes", "1", "--days", "-5"], "--days -5 must be"),
     (["--nodes", "1", "--days", "99999999999"], "certificates end by 9999-12-31"),
     (["--nodes", "1", "--days", str(10**30)], "--days 1000"),
     (["--nodes", "1", "--host", ""], "--host '' must be"),
     (["--nodes", "1", "--host", "two words"], "--host 'two words'"),
     (["--nodes", "1", "--host", "a..b"], "--host 'a..b'"),
     (["--nodes", "1", "--host", "x" * 64], "DNS name"),
     (["--nodes", "1", "--backend", "gnutls"], "invalid choice")],
)  # fmt: skip
def test_a_bad_request_is_one_line_exit_2_and_writes_nothing(args, needle, tmp_path, capsys):
    out = tmp_path / "creds"
    code, stdout, err = _main([out, *args], capsys)
    _refused(code, err, needle)
    assert stdout == "" and not out.exists()


def test_an_output_path_that_is_a_file_or_lies_under_one_is_refused(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("keep me")
    for out, needle in ((f, "is a file"), (f / "sub", "lies under the file")):
        code, _, err = _main([out, "--nodes", "1"], capsys)
        _refused(code, err, needle)
    assert f.read_text() == "keep me"


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root writes into a read-only folder; the path-under-a-file case covers the refusal",
)
def test_a_read_only_folder_is_one_line_and_keeps_what_it_holds(tmp_path, capsys):
    out = tmp_path / "ro"
    make_credentials(out, n_nodes=1)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    out.chmod(0o500)
    try:
        code, _, err = _main([out, "--nodes", "2"], capsys)
    finally:
        out.chmod(0o700)
    _refused(code, err, "Permission denied")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_failure_while_making_keys_leaves_the_old_credentials_whole(tmp_path, capsys,
                                                                      monkeypatch):  # fmt: skip
    """The files are made in a temporary folder and moved in only once all exist."""
    import fl_oracle.experiments.flower.certs as certs

    out = tmp_path / "creds"
    make_credentials(out, n_nodes=2)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(certs.shutil, "which", lambda name, *a, **k: None)  # no openssl
    code, _, err = _main([out, "--nodes", "3", "--backend", "openssl"], capsys)
    _refused(code, err, "needs the openssl binary")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temp folder left


def test_a_long_dns_name_is_in_the_san_and_the_cn_fits_x509(tmp_path):
    host = "a" * 63 + "." + "b" * 63 + ".example.org"
    files = make_credentials(tmp_path, n_nodes=0, host=host)
    server = x509.load_pem_x509_certificate(files["server.pem"].read_bytes())
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert host in san.get_values_for_type(x509.DNSName)
    cn = server.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value
    assert cn == host[:64]
