"""Training-data generation: teachers and the papers' pipelines (DEER, Seal-Tools).

Layer: above ``models``, ``data`` and ``retrieval``; below ``cli``.
"""

from toollab.synth.teacher import (
    Answer,
    Reject,
    Teacher,
    TeacherConfig,
    TeacherDown,
    TeacherStats,
)

__all__ = ["Answer", "Reject", "Teacher", "TeacherConfig", "TeacherDown", "TeacherStats"]
