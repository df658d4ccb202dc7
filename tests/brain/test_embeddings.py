"""The local embedder: real model, real tokenizer, small data."""

from __future__ import annotations

import numpy as np
import pytest

from brain.embeddings import DIMENSIONS, LocalEmbedder


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(batch_size=4, threads=1)


def test_paraphrase_scores_above_unrelated(embedder: LocalEmbedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed(
        [
            "The discount policy allows up to 20 percent off for annual contracts.",
            "Yearly agreements can receive a reduction of at most twenty percent.",
            "The office kitchen is cleaned every Friday afternoon.",
        ]
    )
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.2


def test_vectors_are_unit_length_and_deterministic(embedder: LocalEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about onboarding new hires", "x " * 400, "日本語の文章です"]
    first = embedder.embed(texts)
    again = embedder.embed(texts)
    assert first.shape == (4, DIMENSIONS)
    assert first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(first, again)


def test_batching_order_does_not_change_vectors(embedder: LocalEmbedder) -> None:
    texts = [f"sentence number {i} " + "word " * (i * 7 % 50) for i in range(11)]
    sorted_vectors = embedder.embed(texts)
    unsorted = LocalEmbedder(batch_size=4, threads=1, sort_by_length=False).embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(sorted_vectors, unsorted, atol=1e-4)
    np.testing.assert_allclose(sorted_vectors, single, atol=1e-4)


def test_empty_input(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]).shape == (0, DIMENSIONS)


def test_model_id_is_exposed(embedder: LocalEmbedder) -> None:
    assert embedder.model_id == "all-MiniLM-L6-v2-onnx-int8"
