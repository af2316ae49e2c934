from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNSPECIFIED: _ClassVar[Status]
    STATUS_OK: _ClassVar[Status]
    STATUS_INVALID_INPUT: _ClassVar[Status]
    STATUS_TIMEOUT: _ClassVar[Status]
    STATUS_GRADER_ERROR: _ClassVar[Status]
    STATUS_UPSTREAM_ERROR: _ClassVar[Status]
    STATUS_OVERLOADED: _ClassVar[Status]
STATUS_UNSPECIFIED: Status
STATUS_OK: Status
STATUS_INVALID_INPUT: Status
STATUS_TIMEOUT: Status
STATUS_GRADER_ERROR: Status
STATUS_UPSTREAM_ERROR: Status
STATUS_OVERLOADED: Status

class Sample(_message.Message):
    __slots__ = ("prompt", "response", "label", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    response: str
    label: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, prompt: _Optional[str] = ..., response: _Optional[str] = ..., label: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("reward", "score", "status", "detail", "logs", "prediction")
    class LogsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    REWARD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    PREDICTION_FIELD_NUMBER: _ClassVar[int]
    reward: float
    score: float
    status: Status
    detail: str
    logs: _containers.ScalarMap[str, float]
    prediction: str
    def __init__(self, reward: _Optional[float] = ..., score: _Optional[float] = ..., status: _Optional[_Union[Status, str]] = ..., detail: _Optional[str] = ..., logs: _Optional[_Mapping[str, float]] = ..., prediction: _Optional[str] = ...) -> None: ...

class GraderInfo(_message.Message):
    __slots__ = ("name", "version", "config_hash", "capabilities", "log_keys")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFIG_HASH_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    LOG_KEYS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    config_hash: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    log_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., config_hash: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., log_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("samples", "request_id", "timeout_s")
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    samples: _containers.RepeatedCompositeFieldContainer[Sample]
    request_id: str
    timeout_s: float
    def __init__(self, samples: _Optional[_Iterable[_Union[Sample, _Mapping]]] = ..., request_id: _Optional[str] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class ScoreResponse(_message.Message):
    __slots__ = ("results", "grader", "request_id")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    GRADER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[Result]
    grader: GraderInfo
    request_id: str
    def __init__(self, results: _Optional[_Iterable[_Union[Result, _Mapping]]] = ..., grader: _Optional[_Union[GraderInfo, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EpisodeStartRequest(_message.Message):
    __slots__ = ("episode_id", "environment", "prompt", "label", "metadata", "max_turns")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    environment: str
    prompt: str
    label: str
    metadata: _containers.ScalarMap[str, str]
    max_turns: int
    def __init__(self, episode_id: _Optional[str] = ..., environment: _Optional[str] = ..., prompt: _Optional[str] = ..., label: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_turns: _Optional[int] = ...) -> None: ...

class EpisodeStartResponse(_message.Message):
    __slots__ = ("episode_id", "observation", "status", "detail", "max_turns")
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    observation: str
    status: Status
    detail: str
    max_turns: int
    def __init__(self, episode_id: _Optional[str] = ..., observation: _Optional[str] = ..., status: _Optional[_Union[Status, str]] = ..., detail: _Optional[str] = ..., max_turns: _Optional[int] = ...) -> None: ...

class EpisodeStepRequest(_message.Message):
    __slots__ = ("episode_id", "turn", "action", "tool_code", "final")
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TOOL_CODE_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    turn: int
    action: str
    tool_code: _containers.RepeatedScalarFieldContainer[str]
    final: bool
    def __init__(self, episode_id: _Optional[str] = ..., turn: _Optional[int] = ..., action: _Optional[str] = ..., tool_code: _Optional[_Iterable[str]] = ..., final: _Optional[bool] = ...) -> None: ...

class EpisodeStepResponse(_message.Message):
    __slots__ = ("episode_id", "turn", "feedback", "reward", "score", "done", "status", "detail", "logs")
    class LogsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    turn: int
    feedback: str
    reward: float
    score: float
    done: bool
    status: Status
    detail: str
    logs: _containers.ScalarMap[str, float]
    def __init__(self, episode_id: _Optional[str] = ..., turn: _Optional[int] = ..., feedback: _Optional[str] = ..., reward: _Optional[float] = ..., score: _Optional[float] = ..., done: _Optional[bool] = ..., status: _Optional[_Union[Status, str]] = ..., detail: _Optional[str] = ..., logs: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EpisodeFinishRequest(_message.Message):
    __slots__ = ("episode_id",)
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    def __init__(self, episode_id: _Optional[str] = ...) -> None: ...

class EpisodeFinishResponse(_message.Message):
    __slots__ = ("episode_id", "reward", "score", "turns", "status", "detail", "logs")
    class LogsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    reward: float
    score: float
    turns: int
    status: Status
    detail: str
    logs: _containers.ScalarMap[str, float]
    def __init__(self, episode_id: _Optional[str] = ..., reward: _Optional[float] = ..., score: _Optional[float] = ..., turns: _Optional[int] = ..., status: _Optional[_Union[Status, str]] = ..., detail: _Optional[str] = ..., logs: _Optional[_Mapping[str, float]] = ...) -> None: ...
