"""Where the shipped deployments keep cloned voices: in PostgreSQL shared by every replica (compose:
a service with a named volume; Kubernetes: the URL from a Secret), never on a replica's disk."""

import tomllib

import yaml

from nginx_lb import ROOT

K8S = ROOT / "deploy" / "k8s"


def test_compose_replicas_share_one_postgres_on_a_named_volume():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    services = compose["services"]
    replicas = [n for n, s in services.items() if s.get("image", "").startswith("${LYRE_IMAGE")]
    db = services["voices-db"]
    assert db["image"].startswith("postgres:")
    (volume,) = db["volumes"]
    name, path = volume.split(":")
    assert path == "/var/lib/postgresql/data" and name in compose["volumes"], "a named volume, not a bind"
    env = db["environment"]
    for r in replicas:
        url = services[r]["environment"]["LYRE_VOICES_DATABASE"]
        assert url.startswith(f"postgres://{env['POSTGRES_USER']}:") and url.endswith(f"@voices-db:5432/{env['POSTGRES_DB']}")
        assert services[r]["depends_on"]["voices-db"]["condition"] == "service_healthy"
        assert not any("voices" in str(v) for v in services[r].get("volumes", [])), "no voices on a replica"


def test_kubernetes_pods_read_the_database_url_from_a_secret_and_keep_no_voices():
    dep = yaml.safe_load((K8S / "deployment.yaml").read_text())
    spec = dep["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    env = {e["name"]: e for e in c["env"]}
    ref = env["LYRE_VOICES_DATABASE"]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"]) == ("lyre-voices-db", "url")
    config = tomllib.loads(yaml.safe_load((K8S / "configmap.yaml").read_text())["data"]["lyre.toml"])
    assert "database" not in config.get("voices", {}), "the URL (with its password) is not in the ConfigMap"
    # The emptyDir volumes hold caches and /tmp only: the database is elsewhere, so nothing a
    # client uploads is lost with the pod.
    for v in spec["volumes"]:
        if "emptyDir" in v:
            mount = next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == v["name"])
            assert "voices" not in mount, mount
