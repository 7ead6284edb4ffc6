"""The Kubernetes examples (deploy/kubernetes/) are valid against the Kubernetes schemas that
ship inside the ``kubernetes-validate`` package (no cluster needed), strictly (no unknown
field), for the oldest and newest versions it knows; and they hold what the README promises:
config from a ConfigMap the proxy accepts, keys from a Secret, /readyz and /healthz probes,
resource requests, non-root containers with a read-only root where possible, and N replicas
sharing one PostgreSQL repair log."""

from __future__ import annotations

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


def _secret_env(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    (secret,) = [s for s in of_kind(path, "Secret") if s["metadata"]["name"] == name]
    for key, value in secret["stringData"].items():
        monkeypatch.setenv(key, value)
    data: dict[str, str] = secret["stringData"]
    return data


def test_sidecar_config_is_accepted_and_keys_come_from_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = KUBE / "sidecar.yaml"
    keys = _secret_env(path, "toolcall-guard-keys", monkeypatch)
    assert {"OPENAI_API_KEY", "TOOLCALL_GUARD_ADMIN_TOKEN"} <= set(keys)
    settings = load_settings(_config(path, tmp_path))
    assert settings.server.host == "0.0.0.0"  # the kubelet probes the pod IP
    assert settings.repair_log.url == "sqlite:////data/repairs.sqlite3"
    (agent,) = containers(path, "agent")
    env = {e["name"]: e.get("value") for e in agent["env"]}
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:8780/v1"
    assert "envFrom" not in agent  # the agent never sees the Secret
    assert agent["securityContext"]["readOnlyRootFilesystem"] is True
    (guard,) = containers(path, "toolcall-guard")
    assert {"name": "repairs", "mountPath": "/data"} in guard["volumeMounts"]


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
    secret = _secret_env(path, "toolcall-guard-shared", monkeypatch)
    settings = load_settings(_config(path, tmp_path))
    assert settings.repair_log.url.startswith("postgresql://")
    host = settings.repair_log.url.split("@", 1)[1].split(":", 1)[0]
    assert host in services  # the log's host is the PostgreSQL Service
    (statefulset,) = of_kind(path, "StatefulSet")
    assert statefulset["spec"]["serviceName"] == host
    assert "TOOLCALL_GUARD_REPAIR_LOG__URL" in secret
