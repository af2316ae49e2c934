"""What crosses the process boundary between the pool, the zygote and the workers.

Kept free of heavy imports so the serving process never loads sympy just to talk to
its workers.
"""

from __future__ import annotations

import struct

from services.reward_rules.math.verdict import GradeOptions

__all__ = ["FORK_REQUEST", "Job"]

# Zygote request: 4-byte big-endian memory cap in MiB. Reply: 4-byte pid plus one fd.
FORK_REQUEST = struct.Struct("!i")

# (job id, label, options, [(item index, response)], per-sample budget s, absolute deadline,
#  prompt: its multiple-choice options map letters to their text)
Job = tuple[int, str, GradeOptions, list[tuple[int, str]], float, float, str]
