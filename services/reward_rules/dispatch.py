"""The reward_rules service's grader: routes each sample to a rule grader.

The sample's `metadata["grader"]` wins (the gateway sets it to send one labelled sample to
several graders); else a JSON label names its grader (`{"grader": "math", ...}`); else a label
that carries a reference answer goes to `reference_grader` (math: a plain "42" is graded for
correctness, never paid for its format alone); else the configured default. Sub-graders run
concurrently on their share of the batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.scoring.grader import Grader, GraderBase, config_hash
from services.scoring.labels import label_kind

VERSION = "0.1.0"


class RulesGrader(GraderBase):
    def __init__(self, graders: Mapping[str, Grader], default: str, reference: str = "") -> None:
        for role, name in (("default", default), ("reference", reference or default)):
            if name not in graders:
                raise ValueError(f"{role} grader {name!r} is not one of {sorted(graders)}")
        self.graders = dict(graders)
        self.default = default
        self.reference = reference or default
        identity = {name: [g.info.version, g.info.config_hash] for name, g in sorted(self.graders.items())}
        self._info = GraderInfo(
            name="reward_rules",
            version=VERSION,
            config_hash=config_hash({"graders": identity, "default": default, "reference": self.reference}),
            capabilities=sorted(self.graders),
        )
        self._log_keys = tuple(dict.fromkeys(k for g in self.graders.values() for k in g.log_keys))

    def route(self, sample: Sample) -> str:
        chosen = sample.metadata.get("grader")
        if chosen:
            return chosen
        label = sample.label_json()
        name = label.get("grader") if label else None
        if isinstance(name, str):
            return name
        return self.reference if label_kind(sample) == "reference" else self.default

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        groups: dict[str, list[int]] = {}
        results: list[Result | None] = [None] * len(samples)
        for index, sample in enumerate(samples):
            name = self.route(sample)
            if name in self.graders:
                groups.setdefault(name, []).append(index)
            else:
                results[index] = Result(
                    reward=0.0,  # the server's fallback replaces it
                    score=0.0,
                    status=Status.INVALID_INPUT,
                    detail=f"label names grader {name!r}; this service has {', '.join(sorted(self.graders))}",
                )
        names = list(groups)
        scored = await asyncio.gather(
            *(self.graders[name].score([samples[i] for i in groups[name]]) for name in names)
        )
        for name, group_results in zip(names, scored, strict=True):
            for index, result in zip(groups[name], group_results, strict=True):
                results[index] = result
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            raise RuntimeError(f"no result for samples {missing}")
        return [r for r in results if r is not None]

    async def aclose(self) -> None:
        await asyncio.gather(*(g.aclose() for g in self.graders.values()))
