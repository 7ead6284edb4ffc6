"""The Kubernetes examples (deploy/kubernetes/) are valid against the Kubernetes schemas that
ship inside the ``kubernetes-validate`` package (no cluster needed), strictly (no unknown
field), for the oldest and newest versions it knows; and they work as written (issue 25 item 2,
issue 24 item 6): the image tag is the one ``make image`` builds, the Secrets come from
``create-secrets.sh`` before the first apply with generated values (no placeholder), the log's
URL holds the password PostgreSQL is initialised with, clients need a key and a NetworkPolicy
admits only the named clients; config from a ConfigMap the proxy accepts, /readyz and /healthz
probes, resource requests, non-root containers with a read-only root where possible, and N
replicas sharing one PostgreSQL repair log."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from proxy.settings import load_settings

ROOT = Path(__file__).parent.parent.parent
KUBE = ROOT / "deploy" / "kubernetes"
MANIFESTS = sorted(KUBE.glob("*.yaml"))
VERSIONS = ["1.29.0", "1.37.0"]  # native sidecars' era and the newest schemas shipped


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def of_kind(path: Path, kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents(path) if doc["kind"] == kind]


def containers(path: Path, name: str) -> list[dict[str, Any]]:
    return [
        c
        for workload in of_kind(path, "Deployment") + of_kind(path, "StatefulSet")
        for c in workload["spec"]["template"]["spec"]["containers"]
        if c["name"] == name
    ]


def test_both_examples_exist() -> None:
    assert [p.name for p in MANIFESTS] == ["replicas.yaml", "sidecar.yaml"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifests_validate_against_the_kubernetes_schemas(path: Path, version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in documents(path):
        kubernetes_validate.validate(doc, version, strict=True)  # raises on any error


def test_a_broken_manifest_is_caught() -> None:
    # The check above can fail: a misspelt field is refused under strict validation.
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    deployment = of_kind(KUBE / "sidecar.yaml", "Deployment")[0]
    deployment["spec"]["template"]["spec"]["containers"][1]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSIONS[-1], strict=True)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_proxy_container_is_probed_bounded_and_unprivileged(path: Path) -> None:
    (guard,) = containers(path, "toolcall-guard")
    port = guard["ports"][0]
    assert port["containerPort"] == 8780
    assert port["name"] == "http"
    assert guard["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert guard["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"cpu", "memory"} <= set(guard["resources"]["requests"])
    assert guard["securityContext"]["readOnlyRootFilesystem"] is True
    assert guard["securityContext"]["allowPrivilegeEscalation"] is False
    assert guard["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert {"name": "config", "mountPath": "/app/config", "readOnly": True} in guard["volumeMounts"]
    assert any(source.get("secretRef") for source in guard["envFrom"])
    for workload in of_kind(path, "Deployment") + of_kind(path, "StatefulSet"):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        for container in pod["containers"]:
            assert "requests" in container["resources"], container["name"]


def _config(path: Path, tmp_path: Path) -> Path:
    (config_map,) = [c for c in of_kind(path, "ConfigMap") if "toolcall-guard.toml" in c["data"]]
    file = tmp_path / "toolcall-guard.toml"
    file.write_text(config_map["data"]["toolcall-guard.toml"])
    return file


FAKE_KUBECTL = """#!/bin/sh
# Records each call; no Secret exists yet.
echo "$@" >> "$CALLS"
[ "$1" = get ] && exit 1
exit 0
"""


def created_secrets(example: str, tmp_path: Path, **env: str) -> dict[str, dict[str, str]]:
    """Run create-secrets.sh against a fake kubectl; the Secrets it created, by name."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    calls = tmp_path / "calls"
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    subprocess.run(
        [str(KUBE / "create-secrets.sh"), example],
        env=clean | env | {"KUBECTL": str(kubectl), "CALLS": str(calls)},
        check=True,
        timeout=30,
        capture_output=True,
    )
    secrets = {}
    for line in calls.read_text().splitlines():
        words = line.split(" ")
        if words[:3] == ["create", "secret", "generic"]:
            literals = [w.removeprefix("--from-literal=") for w in words[4:]]
            secrets[words[3]] = dict(literal.split("=", 1) for literal in literals)
    return secrets


def _secret_env(
    secrets: dict[str, dict[str, str]], name: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    for key, value in secrets[name].items():
        monkeypatch.setenv(key, value)
    return secrets[name]


def test_no_secret_ships_in_a_manifest_and_nothing_says_change_me() -> None:
    for path in MANIFESTS:
        assert not of_kind(path, "Secret"), path.name  # create-secrets.sh makes them first
        assert "change-me" not in path.read_text()
    assert "change-me" not in (KUBE / "create-secrets.sh").read_text()


def test_the_manifests_run_the_tag_make_image_builds() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    tag = f"toolcall-guard:{version}"
    for path in MANIFESTS:
        (guard,) = containers(path, "toolcall-guard")
        assert guard["image"] == tag
        assert guard["imagePullPolicy"] == "IfNotPresent"  # `kind load` images are used as is
        text = path.read_text()
        assert "make image" in text
        assert f"kind load docker-image {tag}" in text
        assert f"create-secrets.sh {path.stem}" in text
    dry = subprocess.run(
        ["make", "-n", "image"], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    assert re.search(rf"docker build .* -t {re.escape(tag)} \.$", dry.stdout, re.MULTILINE)


def test_generated_secrets_differ_each_time_and_carry_the_shell_keys(tmp_path: Path) -> None:
    first = created_secrets("sidecar", tmp_path / "a", OPENAI_API_KEY="sk-from-shell")
    second = created_secrets("sidecar", tmp_path / "b")
    keys, again = first["toolcall-guard-keys"], second["toolcall-guard-keys"]
    assert keys["OPENAI_API_KEY"] == "sk-from-shell"
    assert "OPENAI_API_KEY" not in again  # an unset key is left out, not set empty
    for name in ("TOOLCALL_GUARD_CLIENT_KEYS", "TOOLCALL_GUARD_ADMIN_TOKEN"):
        assert len(keys[name]) >= 32
        assert keys[name] != again[name]


def test_an_existing_secret_is_left_alone(tmp_path: Path) -> None:
    kubectl = tmp_path / "kubectl"
    kubectl.write_text('#!/bin/sh\necho "$@" >> "$CALLS"\nexit 0\n')  # every Secret exists
    kubectl.chmod(0o755)
    calls = tmp_path / "calls"
    subprocess.run(
        [str(KUBE / "create-secrets.sh"), "sidecar"],
        env=os.environ | {"KUBECTL": str(kubectl), "CALLS": str(calls)},
        check=True,
        timeout=30,
        capture_output=True,
    )
    assert "create" not in calls.read_text()


def test_the_proxy_admits_named_clients_only(tmp_path: Path) -> None:
    for path in MANIFESTS:
        (deployment,) = [
            d
            for d in of_kind(path, "Deployment")
            if any(
                c["name"] == "toolcall-guard" for c in d["spec"]["template"]["spec"]["containers"]
            )
        ]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        policies = [
            p
            for p in of_kind(path, "NetworkPolicy")
            if p["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(policies) == 1, path.name
        spec = policies[0]["spec"]
        assert spec["policyTypes"] == ["Ingress"]
        for rule in spec["ingress"]:  # each admits labelled pods only, never everyone
            assert rule["from"]
            assert all(peer.get("podSelector") for peer in rule["from"])
    secrets = created_secrets("replicas", tmp_path) | created_secrets("sidecar", tmp_path)
    for secret in secrets.values():
        if "TOOLCALL_GUARD_ADMIN_TOKEN" in secret:  # the proxy's: client keys required
            assert secret["TOOLCALL_GUARD_CLIENT_KEYS"]


def test_sidecar_config_is_accepted_and_keys_come_from_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = KUBE / "sidecar.yaml"
    secrets = created_secrets("sidecar", tmp_path, OPENAI_API_KEY="sk-x")
    keys = _secret_env(secrets, "toolcall-guard-keys", monkeypatch)
    assert {"OPENAI_API_KEY", "TOOLCALL_GUARD_ADMIN_TOKEN", "TOOLCALL_GUARD_CLIENT_KEYS"} <= set(
        keys
    )
    settings = load_settings(_config(path, tmp_path))
    assert settings.server.host == "0.0.0.0"  # the kubelet probes the pod IP
    assert settings.repair_log.url == "sqlite:////data/repairs.sqlite3"
    assert settings.client_keys()  # bound beyond loopback with a key: clients must present one
    (agent,) = containers(path, "agent")
    env = {e["name"]: e for e in agent["env"]}
    assert env["OPENAI_BASE_URL"]["value"] == "http://127.0.0.1:8780/v1"
    # The agent's API key is the proxy's client key, from the Secret; no provider key.
    assert env["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "toolcall-guard-keys",
        "key": "TOOLCALL_GUARD_CLIENT_KEYS",
    }
    assert "envFrom" not in agent  # the agent never sees the rest of the Secret
    assert agent["securityContext"]["readOnlyRootFilesystem"] is True
    (guard,) = containers(path, "toolcall-guard")
    assert {"name": "repairs", "mountPath": "/data"} in guard["volumeMounts"]
    assert guard["envFrom"] == [{"secretRef": {"name": "toolcall-guard-keys"}}]


def test_sidecar_carries_the_example_agent_verbatim() -> None:
    (config_map,) = [
        c
        for c in of_kind(KUBE / "sidecar.yaml", "ConfigMap")
        if c["metadata"]["name"] == "example-agent"
    ]
    assert config_map["data"]["example_agent.py"] == (ROOT / "deploy/example_agent.py").read_text()


def test_replicas_share_one_postgresql_log_behind_a_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = KUBE / "replicas.yaml"
    (deployment,) = of_kind(path, "Deployment")
    assert deployment["spec"]["replicas"] >= 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    services = {s["metadata"]["name"]: s for s in of_kind(path, "Service")}
    proxy = services["toolcall-guard"]["spec"]
    assert proxy["selector"].items() <= labels.items()
    assert proxy["ports"][0]["targetPort"] == "http"
    secrets = created_secrets("replicas", tmp_path)
    secret = _secret_env(secrets, "toolcall-guard-shared", monkeypatch)
    settings = load_settings(_config(path, tmp_path))
    assert settings.repair_log.url.startswith("postgresql://")
    host = settings.repair_log.url.split("@", 1)[1].split(":", 1)[0]
    assert host in services  # the log's host is the PostgreSQL Service
    (statefulset,) = of_kind(path, "StatefulSet")
    assert statefulset["spec"]["serviceName"] == host
    assert "TOOLCALL_GUARD_REPAIR_LOG__URL" in secret
    # The log's URL holds the password PostgreSQL is initialised with, read from its Secret.
    postgres = secrets["toolcall-guard-postgres"]
    password = settings.repair_log.url.split("@", 1)[0].rsplit(":", 1)[1]
    assert password == postgres["POSTGRES_PASSWORD"]
    assert len(password) >= 32
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["envFrom"] == [{"secretRef": {"name": "toolcall-guard-postgres"}}]
