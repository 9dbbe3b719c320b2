"""The clusters' PKI (tests/support/launcher/pki.py), through the command scripts/cluster runs:
the files it wrote with openssl before, each certificate signed by the CA, the client
certificates naming the users and groups Kubernetes authenticates them as."""

import subprocess
import sys
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROOT = Path(__file__).resolve().parents[2]
PARTS = ["apiserver", "apiserver-kubelet-client", "admin", "kubelet", "kube-proxy", "controller-manager",
         "scheduler", "kube-router"]


def cluster_pki(folder: Path) -> Path:
    pki = folder / "pki"
    subprocess.run([sys.executable, "-m", "tests.support.launcher", "pki", str(pki), "--node", "kaos-node",
                    "--address", "127.0.0.1", "--address", "10.244.0.1", "--address", "10.96.0.1"],
                   cwd=ROOT, check=True, timeout=60)
    return pki


def cert(pki: Path, name: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate((pki / f"{name}.crt").read_bytes())


def subject(certificate: x509.Certificate, oid) -> list[str]:
    return [a.value for a in certificate.subject.get_attributes_for_oid(oid)]


def test_the_command_writes_what_scripts_cluster_reads(tmp_path):
    pki = cluster_pki(tmp_path)
    expected = {"ca.crt", "ca.key", "sa.key", "sa.pub"} | {f"{p}.{e}" for p in PARTS for e in ("crt", "key")}
    assert expected <= {f.name for f in pki.iterdir()}
    assert all((pki / f).stat().st_mode & 0o077 == 0 for f in expected if f.endswith(".key"))
    ca = cert(pki, "ca")
    for part in PARTS:
        cert(pki, part).verify_directly_issued_by(ca)
    serialization.load_pem_public_key((pki / "sa.pub").read_bytes())


def test_the_apiserver_serves_the_nodes_and_the_services_addresses(tmp_path):
    serving = cert(cluster_pki(tmp_path), "apiserver")
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.244.0.1", "10.96.0.1"}
    assert "kubernetes.default.svc.cluster.local" in names.get_values_for_type(x509.DNSName)
    usage = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_certificates_name_their_user_and_groups(tmp_path):
    pki = cluster_pki(tmp_path)
    kubelet = cert(pki, "kubelet")
    assert subject(kubelet, NameOID.COMMON_NAME) == ["system:node:kaos-node"]
    assert subject(kubelet, NameOID.ORGANIZATION_NAME) == ["system:nodes"]
    assert subject(cert(pki, "admin"), NameOID.ORGANIZATION_NAME) == ["system:masters"]
    assert subject(cert(pki, "kube-proxy"), NameOID.COMMON_NAME) == ["system:kube-proxy"]
    usage = cert(pki, "kube-router").extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_each_part_signs_in_with_its_own_certificate(tmp_path):
    state = tmp_path
    cluster_pki(state)
    subprocess.run([sys.executable, "-m", "tests.support.launcher", "kubeconfigs", str(state),
                    "--internal", "https://127.0.0.1:6443", "--external", "https://127.0.0.1:16443"],
                   cwd=ROOT, check=True, timeout=60)
    kubelet = yaml.safe_load((state / "kubelet.kubeconfig").read_text())
    assert kubelet["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:6443",
                                                 "certificate-authority": str(state / "pki" / "ca.crt")}
    assert kubelet["users"][0]["user"] == {"client-certificate": str(state / "pki" / "kubelet.crt"),
                                           "client-key": str(state / "pki" / "kubelet.key")}
    host = yaml.safe_load((state / "kubeconfig").read_text())
    assert host["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:16443"
    assert host["users"][0]["user"]["client-certificate"] == str(state / "pki" / "admin.crt")
    assert {f"{p}.kubeconfig" for p in ("admin", "kube-proxy", "controller-manager", "scheduler", "kube-router")} \
        <= {f.name for f in state.iterdir()}
