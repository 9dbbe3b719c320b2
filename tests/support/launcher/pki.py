"""The clusters' key material, with the cryptography library: a CA, certificates it signs (the
apiserver's serving certificate, and client certificates whose subject is a Kubernetes user and
its groups), and the service-account signing key pair (TokenRequest tokens are signed with it).

tests/cluster's control plane needs the CA, the serving certificate and the service-account keys
(``create_pki``); scripts/cluster's real node needs a client certificate for each of its parts
too (``create_cluster_pki``, `python -m tests.support.launcher pki <dir> ...`). Files are named
as kubeadm names them: <name>.crt and <name>.key, ca.*, sa.key and sa.pub."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

API_SERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public_key: Path


@dataclass(frozen=True)
class Client:
    """A client certificate: its file name, and the Kubernetes user and groups it authenticates as."""
    name: str
    user: str
    groups: tuple[str, ...] = ()


def cluster_clients(node: str) -> tuple[Client, ...]:
    """The client certificates of scripts/cluster's parts (the node's kubelet is system:node:<node>)."""
    return (
        Client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",)),
        Client("admin", "kaos-cluster-admin", ("system:masters",)),
        Client("kubelet", f"system:node:{node}", ("system:nodes",)),
        Client("kube-proxy", "system:kube-proxy"),
        Client("controller-manager", "system:kube-controller-manager"),
        Client("scheduler", "system:kube-scheduler"),
        Client("kube-router", "system:kaos-cluster:kube-router"),
    )


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key) -> None:
    path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


class _Authority:
    def __init__(self, common_name: str, days: int):
        now = datetime.datetime.now(datetime.timezone.utc)
        self.validity = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days))
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = (
            self._builder(_name(common_name), self.key.public_key())
            .issuer_name(_name(common_name))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def _builder(self, subject: x509.Name, public_key) -> x509.CertificateBuilder:
        return (x509.CertificateBuilder().subject_name(subject).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(self.validity[0]).not_valid_after(self.validity[1]))

    def issue(self, folder: Path, name: str, subject: x509.Name, usage, alt_names=()) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (self._builder(subject, key.public_key()).issuer_name(self.cert.subject)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(list(alt_names)), critical=False)
        _write_cert(folder / f"{name}.crt", builder.sign(self.key, hashes.SHA256()))
        _write_key(folder / f"{name}.key", key)


def _server_names(addresses: tuple[str, ...]) -> list[x509.GeneralName]:
    return [*(x509.DNSName(n) for n in API_SERVER_NAMES),
            *(x509.IPAddress(ipaddress.ip_address(a)) for a in addresses)]


def create_pki(folder: Path, addresses: tuple[str, ...] = ("127.0.0.1", "10.96.0.1"),
               clients: tuple[Client, ...] = (), common_name: str = "kaos-test-ca", days: int = 1) -> Pki:
    """The CA, the apiserver's serving certificate for ``addresses`` (and the in-cluster names),
    a certificate per client, and the service-account key pair, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = _Authority(common_name, days)
    _write_cert(folder / "ca.crt", ca.cert)
    _write_key(folder / "ca.key", ca.key)
    ca.issue(folder, "apiserver", _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, _server_names(addresses))
    for client in clients:
        ca.issue(folder, client.name, _name(client.user, client.groups), ExtendedKeyUsageOID.CLIENT_AUTH)
    # RS256: what every Kubernetes service-account token consumer accepts.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(folder / "sa.key", sa_key)
    (folder / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return Pki(ca_cert=folder / "ca.crt", ca_key=folder / "ca.key",
               serving_cert=folder / "apiserver.crt", serving_key=folder / "apiserver.key",
               service_account_key=folder / "sa.key", service_account_public_key=folder / "sa.pub")


def create_cluster_pki(folder: Path, node: str, addresses: tuple[str, ...]) -> Pki:
    """scripts/cluster's PKI: the apiserver serves on ``addresses``; every part has its client certificate."""
    return create_pki(folder, addresses, cluster_clients(node), common_name="kaos-cluster-ca", days=30)
