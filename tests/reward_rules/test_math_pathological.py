"""Pathological inputs: every sample gets a verdict or TIMEOUT in time; the pool survives.

Bounds are generous on purpose (deadline + 10 s): these tests check that a verdict
arrives, never how fast.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathConfig, MathGrader
from services.reward_rules.math.pool import _Slot

_GENEROUS_S = 10.0

PATHOLOGICAL: list[tuple[str, str]] = [
    ("\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}", "\\boxed{\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}}"),
    ("5", "\\boxed{\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}}"),
    ("\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}", "\\boxed{7}"),
    ("10^{10^{10}}", "\\boxed{10^{10^{10}}}"),
    ("3", "\\boxed{10^{10^{10^{10}}}}"),
    ("3", "\\boxed{9^{9^{9^{9}}}-9^{9^{9^{9}}}+3}"),
    ("3", "\\boxed{(10^{100})!}"),
    ("3", "\\boxed{1000000!}"),
    ("3", "\\boxed{(10^{10})!!!}"),
    ("3", "\\boxed{\\binom{10^{30}}{10^{15}}}"),
    ("3", "\\boxed{" + "{" * 20000 + "3" + "}" * 20000 + "}"),
    ("3", "\\boxed{" + "(" * 5000 + "3" + ")" * 5000 + "}"),
    ("3", "\\boxed{" + "\\sqrt{" * 400 + "3" + "}" * 400 + "}"),
    ("3", "\\boxed{" + "2^{" * 300 + "2" + "}" * 300 + "}"),
    ("3", "word " * 200_000 + "The answer is 3."),
    ("3", "\\boxed{" * 30_000),
    ("3", "{" * 500_000 + "\\boxed{3}"),
    ("3", "$" * 300_000),
    ("3", "\\boxed{3} \ud800 \udfff \udcff lone surrogates"),
    ("3\ud800", "\\boxed{3}"),
    ("x", "\\boxed{" + "+".join(f"x^{{{i}}}" for i in range(300)) + "}"),
    ("\\sin x", "\\boxed{\\sin(\\sin(\\sin(\\sin(\\sin(\\sin(\\sin(x)))))))}"),
    ("3", "\\boxed{\\frac{1}{0}}"),
    ("3", "\\boxed{0^0}"),
    ("3", "\\boxed{\\log_1 3}"),
    ("\\infty", "\\boxed{-\\infty}"),
    ("3", "\\boxed{}"),
    ("", "\\boxed{3}"),
]


async def test_pathological_inputs_get_a_verdict_in_time(math_grader: MathGrader) -> None:
    samples = [Sample(response=response, label=label) for label, response in PATHOLOGICAL]
    start = time.monotonic()
    results = await math_grader.score(samples)
    assert time.monotonic() - start < math_grader.config.deadline_s + _GENEROUS_S
    assert len(results) == len(samples)
    for (label, _), result in zip(PATHOLOGICAL, results, strict=True):
        assert result.status in (Status.OK, Status.TIMEOUT, Status.INVALID_INPUT), (label[:40], result.detail)
        assert set(result.logs) == set(math_grader.log_keys)
    # A few of them have a definite verdict.
    assert results[0].score == 1.0
    assert results[1].score == 0.0
    assert results[3].score == 1.0
    assert results[18].score == 1.0
    assert results[-1].status == Status.INVALID_INPUT
    await _assert_healthy(math_grader)


async def test_what_the_answer_causes_is_a_verdict_never_a_timeout(math_grader: MathGrader) -> None:
    """A wall of unclosed boxes, deep nesting or a huge expression: reward 0, status OK."""
    walls = [
        "\\boxed{" * 100_000 + " so the answer is \\boxed{4}",
        "\\boxed{" * 100_000 + " The answer is 4.",
        "\\fbox{" * 50_000 + "\\boxed{" * 50_000 + "4",
        "{" * 300_000 + "\\boxed{4}",
        "\\boxed{" + "\\sqrt{" * 3000 + "4" + "}" * 3000 + "}",
    ]
    results = await math_grader.score([Sample(response=r, label="3") for r in walls])
    for result in results:
        assert result.status == Status.OK, result.detail
        assert (result.reward, result.score) == (0.0, 0.0)
    right = await math_grader.score([Sample(response="\\boxed{" * 100_000 + " \\boxed{3}", label="3")])
    assert right[0].score == 1.0, right[0].detail


async def _assert_healthy(grader: MathGrader) -> None:
    results = await grader.score([Sample(response="\\boxed{\\frac{1}{2}}", label="0.5")] * 4)
    assert [r.score for r in results] == [1.0] * 4
    assert all(r.status == Status.OK for r in results)


async def test_one_megabyte_responses(math_grader: MathGrader) -> None:
    filler = "Let me reconsider the problem carefully. " * 26_000
    samples = [
        Sample(response=filler + "So the answer is \\boxed{17}.", label="17"),
        Sample(response="<think>" + filler + "</think> The answer is 17", label="17"),
        Sample(response="<think>" + filler + " \\boxed{17}", label="17"),
    ]
    assert len(samples[0].response) > 1_000_000
    results = await math_grader.score(samples)
    assert [r.score for r in results] == [1.0, 1.0, 0.0]
    assert results[2].logs["math/format_error"] == 1.0


async def test_stuck_worker_is_killed_and_replaced() -> None:
    """A worker that stops answering (as if stuck in C code) is SIGKILLed; the next batch works."""
    grader = MathGrader(MathConfig(deadline_s=2.0, sample_budget_s=1.0, workers=2))
    try:
        await _assert_healthy_eventually(grader)  # a cold start on a busy machine outlasts 2 s
        await _assert_healthy(grader)
        pool = grader.pool
        for slot in pool.slots:
            assert slot.pid is not None
            os.kill(slot.pid, signal.SIGSTOP)
        start = time.monotonic()
        results = await grader.score([Sample(response="\\boxed{3}", label="3")] * 4)
        assert time.monotonic() - start < grader.config.deadline_s + _GENEROUS_S
        # A worker that never answers within a sample's own budget is treated as the answer's
        # doing (a wrong answer); samples the deadline cut short are TIMEOUTs.
        stuck = [r for r in results if r.logs["math/too_costly"] == 1.0 or r.status == Status.TIMEOUT]
        assert stuck
        for result in results:
            assert result.status in (Status.OK, Status.TIMEOUT)
            assert result.logs["math/timeout"] == (1.0 if result.status == Status.TIMEOUT else 0.0)
            if result.logs["math/too_costly"] == 1.0:
                assert (result.status, result.reward, result.score) == (Status.OK, 0.0, 0.0)
        assert pool.kills >= 1
        await _assert_healthy(grader)
        assert pool.alive() == 2
    finally:
        await grader.aclose()


async def test_killed_worker_process_is_replaced(math_grader: MathGrader) -> None:
    await _assert_healthy(math_grader)
    for slot in math_grader.pool.slots:
        assert slot.pid is not None
        os.kill(slot.pid, signal.SIGKILL)
    await _assert_healthy(math_grader)


async def test_a_dead_workers_pid_taken_by_another_process_is_never_signalled(
    math_grader: MathGrader,
) -> None:
    """Dead workers are reaped at once, so their pid can be a stranger's a moment later: the
    pool must not kill (or mistake for its worker) whatever holds that pid now."""
    await _assert_healthy(math_grader)
    await asyncio.to_thread(_replace_a_worker_whose_pid_was_taken, math_grader.pool.slots[0])
    await _assert_healthy(math_grader)


def _replace_a_worker_whose_pid_was_taken(slot: _Slot) -> None:
    assert slot.process is not None
    os.kill(slot.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + _GENEROUS_S
    while slot.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        slot.process.pid = stranger.pid  # as if the kernel had given the dead worker's pid to it
        assert not slot.is_alive()
        slot.ensure_started()  # what the slot's next job does: replace its worker
        assert slot.is_alive()
        assert stranger.poll() is None, "the pool killed a process that was not its worker"
    finally:
        stranger.kill()
        stranger.wait()


async def test_deadline_is_enforced_for_slow_batches() -> None:
    """With a tiny deadline, samples never started still come back (as TIMEOUT) in time."""
    grader = MathGrader(MathConfig(deadline_s=0.3, workers=1))
    try:
        await _assert_healthy_eventually(grader)
        filler = "step " * 200_000
        samples = [Sample(response=filler + f"\\boxed{{{i}}}", label=str(i)) for i in range(64)]
        start = time.monotonic()
        results = await grader.score(samples)
        assert time.monotonic() - start < 0.3 + _GENEROUS_S
        assert len(results) == 64
        assert all(r.status in (Status.OK, Status.TIMEOUT) for r in results)
    finally:
        await grader.aclose()


async def _assert_healthy_eventually(grader: MathGrader) -> None:
    for _ in range(50):
        results = await grader.score([Sample(response="\\boxed{1}", label="1")])
        if results[0].status == Status.OK:
            return
    raise AssertionError("grader never became healthy")


def test_safe_from_threads_and_separate_event_loops(math_grader: MathGrader) -> None:
    errors: list[BaseException] = []
    scores: list[float] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        try:
            results = asyncio.run(math_grader.score([Sample(response=f"\\boxed{{{n}}}", label=str(n))] * 8))
            with lock:
                scores.extend(r.score for r in results)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert scores == [1.0] * 32


@pytest.mark.parametrize("memory_mb", [0, 1024])
async def test_memory_cap_setting(memory_mb: int) -> None:
    grader = MathGrader(MathConfig(workers=1, memory_mb=memory_mb))
    try:
        results = await grader.score([Sample(response="\\boxed{2^{100000}}", label="2^{100000}")])
        assert results[0].score == 1.0
    finally:
        await grader.aclose()
