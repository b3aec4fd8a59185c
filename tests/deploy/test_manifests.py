"""The shipped deployment files: Kubernetes manifests, compose file, nginx config, Dockerfile.
Each check ties a manifest to what the server really does (its config, metrics, probes)."""

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from nginx_lb import NGINX_DIR, ROOT, e2e, nginx_binary

K8S = ROOT / "deploy" / "k8s"
# The oldest Kubernetes the manifests target (autoscaling/v2 and policy/v1 PDBs are GA there).
K8S_VERSION = "1.29"


def k8s_docs():
    docs = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert isinstance(doc, dict), f"{path.name}: not a mapping"
            for field in ("apiVersion", "kind"):
                assert doc.get(field), f"{path.name}: no {field}"
            if doc["kind"] != "Kustomization":
                assert doc.get("metadata", {}).get("name"), f"{path.name}: no metadata.name"
            docs.setdefault(doc["kind"], []).append((path.name, doc))
    return docs


@pytest.fixture(scope="module")
def k8s():
    return k8s_docs()


def one(k8s, kind, name=None):
    found = [d for _, d in k8s.get(kind, []) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def server_config(k8s):
    return one(k8s, "ConfigMap", "lyre-config")["data"]["lyre.toml"]


def exported_metrics():
    """name -> kind for every metric the server records (crates/lyre-server/src)."""
    out = {}
    for path in (ROOT / "crates" / "lyre-server" / "src").rglob("*.rs"):
        for kind, name in re.findall(r'metrics::(gauge|counter|histogram)!\("([a-z_]+)"', path.read_text()):
            out[name] = kind
    assert "lyre_live_sessions" in out, "the scan found no metrics"
    return out


def test_every_manifest_has_its_kind(k8s):
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ConfigMap", "Kustomization"} <= set(k8s)
    listed = set(one(k8s, "Kustomization")["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    # The adapter rules belong to the monitoring namespace and are applied on their own.
    assert listed == on_disk - {"prometheus-adapter-rules.yaml"}, (listed, on_disk)


def test_configmap_is_a_valid_server_config(k8s, tmp_path):
    path = tmp_path / "lyre.toml"
    path.write_text(server_config(k8s))
    r = subprocess.run([e2e.LYRE, "check-config", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cfg = tomllib.loads(server_config(k8s))
    assert cfg["model"]["allow_cpu_adapter"] is False


def test_the_images_model_directory_gives_way_to_a_repo():
    """The image serves /models from its config file, so `-e LYRE_MODEL_REPO=...` (or
    LYRE_MODEL_DIR) replaces it instead of clashing with an image-wide variable."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY deploy/image.toml /etc/lyre/lyre.toml" in dockerfile
    assert re.search(r"LYRE_CONFIG=/etc/lyre/lyre.toml\b", dockerfile)
    assert "LYRE_MODEL_DIR=" not in dockerfile.replace("-e LYRE_MODEL_DIR=", "")
    image = ROOT / "deploy" / "image.toml"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LYRE_")}
    plain = subprocess.run([e2e.LYRE, "check-config", str(image)], capture_output=True, text=True, env=env)
    assert plain.returncode == 0 and tomllib.loads(plain.stdout.split("\n", 1)[1])["model"]["dir"] == "/models"
    repo = subprocess.run([e2e.LYRE, "check-config", str(image)], capture_output=True, text=True,
                          env={**env, "LYRE_MODEL_REPO": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice"})
    assert repo.returncode == 0, repo.stderr
    model = tomllib.loads(repo.stdout.split("\n", 1)[1])["model"]
    assert (model["dir"], model["repo"]) == ("", "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice")


def test_deployment_requests_a_gpu_probes_and_drains(k8s):
    dep = one(k8s, "Deployment", "lyre")
    spec = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (c,) = spec["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    cfg = tomllib.loads(server_config(k8s))
    port = int(cfg["server"]["listen"].rsplit(":", 1)[1])
    assert [p["containerPort"] for p in c["ports"]] == [port]
    pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    # SIGTERM comes after preStop; the grace period must cover both and the drain.
    assert spec["terminationGracePeriodSeconds"] > int(pre_stop[1]) + cfg["server"]["drain_timeout_s"]
    # The config file the container reads is the ConfigMap's.
    config_arg = c["args"][c["args"].index("--config") + 1]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    mount = next(n for n, p in mounts.items() if config_arg.startswith(p + "/"))
    assert volumes[mount]["configMap"]["name"] == "lyre-config"
    assert Path(config_arg).name == "lyre.toml"
    # The image's user (Dockerfile USER) is the one runAsNonRoot checks.
    user = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert user and spec["securityContext"]["runAsUser"] == int(user[1])


def test_service_and_pdb_select_the_pods(k8s):
    labels = one(k8s, "Deployment", "lyre")["spec"]["template"]["metadata"]["labels"]
    svc = one(k8s, "Service", "lyre")
    assert svc["spec"]["selector"].items() <= labels.items()
    port_names = {p["name"] for p in one(k8s, "Deployment")["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert all(p["targetPort"] in port_names for p in svc["spec"]["ports"])
    pdb = one(k8s, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_hpa_scales_on_utilisation_the_adapter_computes_from_exported_gauges(k8s):
    hpa = one(k8s, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == one(k8s, "Deployment")["metadata"]["name"]
    names = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert "lyre_session_utilisation" in names
    exported = exported_metrics()
    rules = yaml.safe_load(one(k8s, "ConfigMap", "adapter-config")["data"]["config.yaml"])["rules"]
    served = {r["name"]["as"]: r for r in rules}
    for name in names:
        assert name in served, f"no adapter rule serves {name}"
        rule = served[name]
        assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
        # Every series the rule reads is a gauge the server exports.
        series = set(re.findall(r"\b(lyre_[a-z_]+)\b", rule["seriesQuery"] + rule["metricsQuery"]))
        for s in series:
            assert exported.get(s) == "gauge", f"{name} reads {s}, which is not a gauge the server exports"
    utilisation = served["lyre_session_utilisation"]
    assert utilisation["seriesQuery"].startswith("lyre_live_sessions{")
    assert "<<.Series>>" in utilisation["metricsQuery"].split("/")[0]
    assert "/ max(lyre_max_sessions{" in utilisation["metricsQuery"]
    target = next(m for m in hpa["spec"]["metrics"] if m["pods"]["metric"]["name"] == "lyre_session_utilisation")
    value = target["pods"]["target"]["averageValue"]
    fraction = int(value[:-1]) / 1000 if value.endswith("m") else float(value)
    assert 0 < fraction <= 1, f"a utilisation target is a fraction of the slots, got {value}"


def test_every_manifest_is_valid_against_the_kubernetes_schemas(k8s):
    """kubernetes-validate (offline schemas, strict: unknown fields are errors), for every
    manifest; kustomization.yaml is kustomize's, not an API object (its list is checked above)."""
    import kubernetes_validate

    for kind, docs in k8s.items():
        if kind == "Kustomization":
            continue
        for name, doc in docs:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    # The validator does bite: a mistyped field is refused.
    broken = dict(one(k8s, "Deployment"))
    broken["spec"] = {**broken["spec"], "replicas": "two"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    unknown = {**one(k8s, "Service"), "spec": {**one(k8s, "Service")["spec"], "portz": []}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(unknown, K8S_VERSION, strict=True)


def upstream_hosts():
    return re.findall(r"^\s*server\s+([\w.-]+):(\d+)", (NGINX_DIR / "lyre.conf").read_text(), re.M)


def test_compose_runs_the_replicas_nginx_balances_and_prometheus_scrapes():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    services = compose["services"]
    replicas = sorted(n for n, s in services.items() if s.get("image", "").startswith("${LYRE_IMAGE"))
    assert len(replicas) == 2
    gpus = [services[n]["deploy"]["resources"]["reservations"]["devices"][0] for n in replicas]
    assert all(g["driver"] == "nvidia" and "graphics" in g["capabilities"] for g in gpus)
    assert len({tuple(g["device_ids"]) for g in gpus}) == 2, "each replica needs its own GPU"
    assert sorted(h for h, _ in upstream_hosts()) == replicas
    assert any("nginx/lyre.conf" in v for v in services["nginx"]["volumes"])
    prom = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (job,) = prom["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert sorted(job["static_configs"][0]["targets"]) == sorted(f"{h}:{p}" for h, p in upstream_hosts())
    stop = int(services[replicas[0]]["stop_grace_period"].rstrip("s"))
    drain = int(services[replicas[0]]["environment"]["LYRE_SERVER_DRAIN_TIMEOUT_S"])
    assert stop > drain


def test_nginx_accepts_the_shipped_config(tmp_path):
    """`nginx -t` on deploy/nginx/nginx.conf (which includes lyre.conf) as shipped. nginx resolves
    the upstream names at load time, so they are given loopback addresses in a private
    /etc/hosts (a mount namespace; needs root, as CI has)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost " + " ".join(h for h, _ in upstream_hosts()) + "\n")
    script = f"mount --bind {hosts} /etc/hosts && exec {nginx_binary()} -t -c {NGINX_DIR / 'nginx.conf'}"
    r = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0 and "test is successful" in r.stderr, r.stderr
