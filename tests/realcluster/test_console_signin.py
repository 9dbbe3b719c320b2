"""People sign in to the cluster's console in Chromium (issue 29): the real-cluster tier's run of
tests/console/signin_scenario.py, whose `kaos up` run is tests/console/test_browser_signin.py.

Everything the browser talks to is the cluster's: the platform chart's console (kaos-console in
kaos-system, signing people in as cluster/kaos-values.yaml's console.oidc says: the issuer by its
cluster DNS name, the public client kaos-console) reached through a port-forward; Ory Hydra's pod
of cluster/hydra.yaml, which the browser reaches under that same DNS name (Chromium's
--host-resolver-rules map it to a port-forward of Hydra's public port), so the authorization
endpoint the console's server found in the issuer's discovery, the redirects and the tokens' iss
are the ones the agents' pods and the console's pod see. Hydra sends the browser to its login and
consent app at the name the pod's configuration gives it (login.kaos-identity.test), which the
browser maps to tests/support/hydra.py's LoginApp on this machine; the app accepts the challenges
through a port-forward of Hydra's admin port. The console's pod exchanges the code at Hydra's
token endpoint and forwards the person's token to the agents' pods, whose spec.access decides.

Skipped unless the cluster of scripts/cluster runs (tests/realcluster/conftest.py)."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
import yaml

from tests.console import signin_scenario as scenario
from tests.console.conftest import Screenshots, launched_chromium
from tests.support.hydra import (
    CLUSTER_ADMIN_PORT,
    CLUSTER_NAMESPACE,
    CLUSTER_PUBLIC_PORT,
    CLUSTER_SERVICE,
    Issuer,
    LoginApp,
)

pytestmark = pytest.mark.timeout(900)

CONSOLE_NAMESPACE, CONSOLE_SERVICE, CONSOLE_PORT = "kaos-system", "kaos-console", 80
RESOURCES = [("modelapi", "notes-llm"), ("mcpserver", "notes"), ("agent", "ops"), ("agent", "greeter")]


def console_oidc(real_cluster) -> dict[str, str]:
    """The --oidc-* arguments of the platform's console (the chart's console.oidc), by name."""
    found = real_cluster.kubectl("get", "deployment", CONSOLE_SERVICE, "-n", CONSOLE_NAMESPACE, "-o", "json", check=False)
    if found.returncode != 0:
        pytest.fail(f"the platform has no console ({found.stderr.strip()}): cluster/kaos-values.yaml enables it "
                    "with console.oidc; start the cluster again with scripts/cluster up")
    [container] = yaml.safe_load(found.stdout)["spec"]["template"]["spec"]["containers"]
    return {arg[len("--oidc-"):].split("=", 1)[0]: arg.split("=", 1)[1]
            for arg in container.get("args", []) if arg.startswith("--oidc-")}


def hydra_urls(real_cluster) -> dict:
    """The urls of Hydra's configuration in the cluster: self.issuer, login, consent."""
    config = real_cluster.json("get", "configmap", CLUSTER_SERVICE, "-n", CLUSTER_NAMESPACE)
    return yaml.safe_load(config["data"]["hydra.yml"])["urls"]


@pytest.fixture(scope="module")
def identity(real_cluster):
    """The console's sign-in wired to the cluster's Hydra: the console's and Hydra's ports
    forwarded, the login app running, the console's client registered; what the browser maps."""
    oidc, urls = console_oidc(real_cluster), hydra_urls(real_cluster)
    issuer_url = urls["self"]["issuer"]
    assert oidc.get("issuer") == issuer_url and oidc.get("client-id"), oidc
    login = LoginApp(scenario.PEOPLE)
    try:
        with (real_cluster.port_forward(CLUSTER_NAMESPACE, CLUSTER_SERVICE, CLUSTER_PUBLIC_PORT) as public,
              real_cluster.port_forward(CLUSTER_NAMESPACE, CLUSTER_SERVICE, CLUSTER_ADMIN_PORT) as admin,
              real_cluster.port_forward(CONSOLE_NAMESPACE, CONSOLE_SERVICE, CONSOLE_PORT) as console):
            issuer = Issuer(issuer_url, f"http://127.0.0.1:{admin}/admin", f"http://127.0.0.1:{public}")
            issuer.provision_signing_keys()
            login.admin_url = issuer.admin_url
            console_url = f"http://127.0.0.1:{console}"
            issuer.public_client(console_url + "/", [oidc["audience"]], client_id=oidc["client-id"])
            login_host = urlsplit(urls["login"]).hostname
            assert urlsplit(urls["consent"]).hostname == login_host, urls
            rules = [f"MAP {urlsplit(issuer_url).hostname} 127.0.0.1:{public}",
                     f"MAP {login_host} {urlsplit(login.url).netloc}"]
            yield {"console": console_url, "issuer": issuer_url, "audience": oidc["audience"],
                   "host_rules": ", ".join(rules)}
    finally:
        login.stop()


@pytest.fixture(scope="module")
def browser(identity):
    with launched_chromium((f"--host-resolver-rules={identity['host_rules']}",)) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def guarded_namespace(real_cluster, identity, tmp_path_factory):
    """The scenario's resources in a namespace of their own, Ready; deleted afterwards."""
    namespace = f"rc-signin-{uuid.uuid4().hex[:6]}"
    folder = scenario.guarded(tmp_path_factory.mktemp("signin-manifests"), identity["issuer"], identity["audience"])
    real_cluster.kubectl("create", "namespace", namespace)
    try:
        real_cluster.kubectl("apply", "-n", namespace, "-f", str(folder))
        real_cluster.wait_ready(namespace, RESOURCES, timeout=300)
        yield namespace
    finally:
        real_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_people_sign_in_to_the_clusters_console(browser, identity, guarded_namespace, tmp_path_factory):
    screenshots = Screenshots(tmp_path_factory.getbasetemp() / "cluster-console-screenshots")
    scenario.people_sign_in_and_see_what_the_agent_lets_them(browser, identity["console"], guarded_namespace,
                                                            screenshots, identity["audience"])
