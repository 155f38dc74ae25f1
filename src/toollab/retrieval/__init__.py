"""Tool retrieval (BM25, dense, hybrid), a BM25 index over plain texts, demonstration
retrieval, retrieval evaluation, and DEER's clustering-based candidate-toolset sampling."""

from toollab.retrieval.base import (
    Hit,
    Retriever,
    get_retriever,
    register_retriever,
    retriever_names,
    tool_text,
)
from toollab.retrieval.bm25 import BM25Retriever
from toollab.retrieval.demos import DemoRetriever, few_shot_messages
from toollab.retrieval.dense import DenseRetriever
from toollab.retrieval.evaluate import RetrievalReport, evaluate_retriever
from toollab.retrieval.hybrid import HybridRetriever, rrf
from toollab.retrieval.sampling import DEER_MIX, CandidateSampler, ToolClusters
from toollab.retrieval.text_index import TextHit, TextIndex

__all__ = [
    "DEER_MIX",
    "BM25Retriever",
    "CandidateSampler",
    "DemoRetriever",
    "DenseRetriever",
    "Hit",
    "HybridRetriever",
    "RetrievalReport",
    "Retriever",
    "TextHit",
    "TextIndex",
    "ToolClusters",
    "evaluate_retriever",
    "few_shot_messages",
    "get_retriever",
    "register_retriever",
    "retriever_names",
    "rrf",
    "tool_text",
]
