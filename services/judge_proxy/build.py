"""Builds the judge grader from settings: rubrics, upstreams, judge cache, metrics.

With no upstream configured the service still starts: rubrics that need a judge answer
UPSTREAM_ERROR naming the missing setting (string_check rubrics still work).
"""

from __future__ import annotations

import logging

from services.judge_proxy.grader import JudgeGrader
from services.judge_proxy.judge_cache import JudgeCache
from services.judge_proxy.metrics import JudgeMetrics
from services.judge_proxy.rubrics import load_rubrics
from services.judge_proxy.settings import JudgeServiceSettings
from services.judge_proxy.upstream import NO_UPSTREAM, Upstream, UpstreamPool
from services.scoring.cache import make_cache

log = logging.getLogger(__name__)

GRADERS = ("judge",)


def build_grader(settings: JudgeServiceSettings) -> JudgeGrader:
    metrics = JudgeMetrics()
    labels = [u.label for u in settings.upstreams]
    if len(set(labels)) != len(labels):
        raise ValueError(f"judge upstreams need distinct names (name or model): {labels}")
    upstreams = [Upstream(u, settings.retry, settings.ratelimit, metrics) for u in settings.upstreams]
    if not upstreams:
        log.warning("%s", NO_UPSTREAM)
    pool = UpstreamPool(upstreams, settings.retry, metrics)
    cache = JudgeCache(make_cache(settings.judge_cache), metrics)
    return JudgeGrader(settings, load_rubrics(settings.rubric_files), pool, cache, metrics)


def build_one(settings: JudgeServiceSettings, name: str) -> JudgeGrader:
    if name not in GRADERS:
        raise KeyError(name)
    return build_grader(settings)
