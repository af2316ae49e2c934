"""Rubrics as configuration, after OpenAI's RFT grader types.

- `score_model`: the judge writes a score on `range`; the reward is that score mapped onto
  `output_range`; `pass_threshold` (on the judge's scale) decides `score` 1/0.
- `label_model`: the judge picks one of `labels`; `label_values` give each one's reward
  (default 1 for `passing_labels`, else 0).
- `string_check`: compares two rendered strings; no judge call.
- `multi`: named sub-rubrics combined by an arithmetic `formula` (services/scoring/formula.py).

A YAML file holds one rubric, a list of them, or `{rubrics: [...]}`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from services.judge_proxy.parsing import VerdictFormat
from services.judge_proxy.templating import validate
from services.scoring.formula import Formula

BUILTIN_PACKAGE = "services.judge_proxy.builtin_rubrics"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Message(_Strict):
    role: Literal["system", "user", "assistant", "developer"]
    content: str

    @field_validator("content")
    @classmethod
    def _template(cls, value: str) -> str:
        return validate(value)


class SamplingOverrides(_Strict):
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    top_logprobs: int | None = Field(default=None, ge=1, le=20)


class _ModelRubric(_Strict):
    name: str = ""
    description: str = ""
    messages: list[Message] = Field(min_length=1)
    logprobs: bool = Field(default=False, description="weight the verdict by the judge's top logprobs")
    structured_output: bool = Field(default=False, description="ask for JSON (response_format json_schema)")
    sampling: SamplingOverrides = Field(default_factory=SamplingOverrides)
    verdict_nonce: bool = Field(
        default=True,
        description="end every request with a line asking for the final verdict after a code random "
        "per request (VERDICT-<code>: ...) and read only that line: the response cannot write it. "
        "false: the verdict is read in verdict_format, never from text the response also holds. "
        "Structured-output rubrics need no code (their verdict is a top-level JSON key)",
    )
    final_answer_only: bool = Field(
        default=False,
        description="show the judge only the response's final part: the text after its last </think> "
        "(nothing when it opened <think> and never closed it: it was cut off before any answer). For "
        "verifiers, which judge the answer a response commits to, not its 100k characters of thinking",
    )
    verdict_format: Literal["auto", "brackets", "json", "result", "keyword", "any"] = Field(
        default="auto",
        description="the only verdict form read from the judge's reply: brackets [[8]], json "
        '{"score": 8}, result [RESULT] 8, keyword "Rating: 8", any (all, the last one wins); auto: '
        "json with structured_output, else the form the rubric's messages ask for ([[ or [RESULT]), else any",
    )

    @property
    def verdict(self) -> VerdictFormat:
        """The verdict form this rubric asked the judge for: nothing else in a reply counts."""
        if self.verdict_format != "auto":
            return self.verdict_format
        if self.structured_output:
            return "json"
        text = "\n".join(message.content for message in self.messages)
        if "[[" in text:
            return "brackets"
        if "[RESULT]" in text:
            return "result"
        return "any"


class ScoreModelRubric(_ModelRubric):
    type: Literal["score_model"] = "score_model"
    range: tuple[float, float] = (1.0, 10.0)
    output_range: tuple[float, float] = (0.0, 1.0)
    pass_threshold: float | None = None

    @model_validator(mode="after")
    def _ranges(self) -> ScoreModelRubric:
        if self.range[0] >= self.range[1]:
            raise ValueError(f"range {list(self.range)} must be [low, high] with low < high")
        if self.pass_threshold is not None and not self.range[0] <= self.pass_threshold <= self.range[1]:
            raise ValueError(f"pass_threshold {self.pass_threshold} is outside range {list(self.range)}")
        return self

    def to_output(self, raw: float) -> float:
        low, high = self.range
        out_low, out_high = self.output_range
        return out_low + (raw - low) / (high - low) * (out_high - out_low)


class LabelModelRubric(_ModelRubric):
    type: Literal["label_model"] = "label_model"
    labels: list[str] = Field(min_length=2)
    passing_labels: list[str] = Field(min_length=1)
    label_values: dict[str, float] = Field(default_factory=dict, description="reward per label")
    invalid_labels: list[str] = Field(
        default_factory=list,
        description="labels that say the response holds no gradable answer (cut off, no final answer): "
        "logged as judge/invalid, so a run sees how often its policy gives none",
    )

    @model_validator(mode="after")
    def _labels(self) -> LabelModelRubric:
        unknown = (set(self.passing_labels) | set(self.label_values) | set(self.invalid_labels)) - set(
            self.labels
        )
        if unknown:
            raise ValueError(f"labels {sorted(unknown)} are not in labels {self.labels}")
        if len({label.casefold() for label in self.labels}) != len(self.labels):
            raise ValueError("labels must differ beyond case")
        if set(self.invalid_labels) & set(self.passing_labels):
            raise ValueError(f"invalid_labels {self.invalid_labels} cannot be passing labels")
        return self

    def value_of(self, label: str) -> float:
        if label in self.label_values:
            return self.label_values[label]
        return 1.0 if label in self.passing_labels else 0.0


class StringCheckRubric(_Strict):
    type: Literal["string_check"] = "string_check"
    name: str = ""
    description: str = ""
    input: str = "{{sample.output_text}}"
    reference: str = "{{item.reference}}"
    operation: Literal["eq", "ne", "like", "ilike"] = "eq"

    @field_validator("input", "reference")
    @classmethod
    def _template(cls, value: str) -> str:
        return validate(value)


class MultiRubric(_Strict):
    type: Literal["multi"] = "multi"
    name: str = ""
    description: str = ""
    graders: dict[str, SubRubric] = Field(min_length=1)
    formula: str
    pass_threshold: float | None = None

    @field_validator("formula")
    @classmethod
    def _formula(cls, value: str) -> str:
        Formula(value)  # syntax and allowed operations
        return value

    @model_validator(mode="after")
    def _names(self) -> MultiRubric:
        Formula(self.formula, names=set(self.graders))
        return self


SubRubric = Annotated[
    ScoreModelRubric | LabelModelRubric | StringCheckRubric | MultiRubric, Field(discriminator="type")
]
Rubric = SubRubric
MultiRubric.model_rebuild()
_RUBRIC = TypeAdapter(Rubric)


def parse_rubrics(data: Any, source: str) -> list[Rubric]:
    """Rubrics from parsed YAML; each must be named (top-level names key the registry)."""
    if isinstance(data, dict) and "rubrics" in data and "type" not in data:
        data = data["rubrics"]
    items = data if isinstance(data, list) else [data]
    rubrics: list[Rubric] = []
    for index, item in enumerate(items):
        try:
            rubric = _RUBRIC.validate_python(item)
        except ValueError as exc:
            raise ValueError(f"{source}: rubric #{index + 1}: {exc}") from exc
        if not rubric.name:
            raise ValueError(f"{source}: rubric #{index + 1} has no name")
        rubrics.append(rubric)
    return rubrics


def load_rubric_file(path: Path) -> list[Rubric]:
    return parse_rubrics(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))


def builtin_rubrics() -> list[Rubric]:
    found: list[Rubric] = []
    for entry in sorted(resources.files(BUILTIN_PACKAGE).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            found.extend(parse_rubrics(yaml.safe_load(entry.read_text(encoding="utf-8")), entry.name))
    return found


def load_rubrics(files: list[Path]) -> dict[str, Rubric]:
    """Built-ins first; a file's rubric of the same name replaces a built-in (never another file's)."""
    registry = {rubric.name: rubric for rubric in builtin_rubrics()}
    from_files: dict[str, Path] = {}
    for path in files:
        for rubric in load_rubric_file(path):
            if rubric.name in from_files:
                raise ValueError(f"rubric {rubric.name!r} is defined in {from_files[rubric.name]} and {path}")
            from_files[rubric.name] = path
            registry[rubric.name] = rubric
    return registry


def uses_judge(rubric: Rubric) -> bool:
    if isinstance(rubric, MultiRubric):
        return any(uses_judge(sub) for sub in rubric.graders.values())
    return not isinstance(rubric, StringCheckRubric)
