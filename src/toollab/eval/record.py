"""The prediction record (one line of a run's ``predictions.jsonl``).

The records live in :mod:`toollab.schema.record`; they are re-exported here.
"""

from toollab.schema.record import ExecutionRecord, ParseResult, Prediction, Step

__all__ = ["ExecutionRecord", "ParseResult", "Prediction", "Step"]
