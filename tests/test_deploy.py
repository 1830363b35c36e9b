"""What an operator deploys: the Kubernetes manifests render with `kubectl kustomize` (Debian's kubectl,
installed by `make test`) and every object is valid against the Kubernetes schema (kubernetes-validate);
they run the image's roles as the image runs them (deploy/Dockerfile, runtime/roles.py)."""

import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml

from runtime.roles import ROLES
from tests.conftest import PROJECT_DIR

KUBERNETES = PROJECT_DIR / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.33.0"


def render(folder: str) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(
            "kubectl is not installed. `make test` installs Debian's kubernetes-client when it runs as root "
            "(apt-get install kubernetes-client); install it and run the tests again."
        )
    rendered = subprocess.run(
        [kubectl, "kustomize", str(KUBERNETES / folder)], capture_output=True, text=True, timeout=60
    )
    assert rendered.returncode == 0, rendered.stderr
    return [document for document in yaml.safe_load_all(rendered.stdout) if document]


@pytest.fixture(scope="module", params=["base", "overlays/example"])
def objects(request):
    return render(request.param)


def _kinds(objects) -> dict[str, list[dict]]:
    kinds: dict[str, list[dict]] = {}
    for item in objects:
        kinds.setdefault(item["kind"], []).append(item)
    return kinds


def test_every_object_is_valid_against_the_kubernetes_schema(objects):
    for item in objects:
        kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)


def test_each_role_runs_from_the_image_with_the_shared_settings(objects):
    kinds = _kinds(objects)
    workloads = kinds["Deployment"] + kinds["Job"]
    roles = set()
    for workload in workloads:
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        roles.add(container["args"][0])
        sources = [next(iter(source.values()))["name"] for source in container["envFrom"]]
        assert [
            name.rsplit("-", 1)[0] if name.startswith("registry-secrets-") else name for name in sources
        ] == [
            "registry-config",
            "registry-secrets",
        ]
        assert container["securityContext"]["runAsNonRoot"] is True
        assert container["resources"]["requests"]["memory"]
    assert roles == set(ROLES)


def test_beat_is_one_pod_that_never_runs_twice_and_web_scales(objects):
    deployments = {item["metadata"]["name"]: item for item in _kinds(objects)["Deployment"]}
    (autoscaler,) = _kinds(objects)["HorizontalPodAutoscaler"]

    assert (
        deployments["registry-beat"]["spec"]["replicas"],
        deployments["registry-beat"]["spec"]["strategy"],
    ) == (
        1,
        {"type": "Recreate"},
    )
    assert autoscaler["spec"]["scaleTargetRef"]["name"] == "registry-web"
    for name in ("registry-web", "registry-metrics"):
        (container,) = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/health"
        assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    budgets = {
        item["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
        for item in _kinds(objects)["PodDisruptionBudget"]
    }
    assert budgets == {"web", "metrics", "worker"}


def test_the_ingress_keeps_streams_and_websockets_open(objects):
    (ingress,) = _kinds(objects)["Ingress"]
    annotations = ingress["metadata"]["annotations"]

    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600


def test_the_image_runs_the_roles_module_as_a_non_root_user():
    dockerfile = (PROJECT_DIR / "deploy" / "Dockerfile").read_text()

    assert 'ENTRYPOINT ["python", "-m", "runtime.roles"]' in dockerfile
    assert "USER 10001" in dockerfile
    assert "DJANGO_SETTINGS_MODULE=registry_site.settings.production" in dockerfile
