"""Label code (asserts, setup, check, helpers) is request data: it runs in a label sandbox, never in
the service, and the helpers the tests call come from the label, never from the candidate."""

# ruff: noqa: E501  (programs and label code stay one string per line of intent)

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from arbiter.contract import Status
from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, asserts, check, code_grader, score, stdio

__all__ = ["code_grader"]

DOUBLE = "def f(x):\n    return 2 * x\n"


def test_label_code_never_runs_in_the_service(code_grader: CodeGrader, tmp_path: Path) -> None:
    marker = Path("/tmp") / f"arbiter-label-rce-{uuid.uuid4().hex}"
    write = f"open({str(marker)!r}, 'w').write('pwned')\n"
    in_check = "def check(candidate):\n    " + write + "    assert candidate(1) == 2\n"
    host_view = (
        "import os\ndef check(candidate):\n    assert candidate(1) == 2\n"
        f"    assert not os.path.exists('/work') and not os.path.exists({str(tmp_path)!r})\n"
        f"    assert os.getpid() != {os.getpid()}\n"
    )
    samples = [
        asserts(DOUBLE, "f", [f"assert f(1) == 2 and open({str(marker)!r}, 'w').write('x')"]),
        asserts(DOUBLE, "f", ["assert f(1) == 2"], setup=write),
        check(DOUBLE, "f", in_check),
        check(DOUBLE, "f", "def check(candidate):\n    assert candidate(1) == 2\n", helpers=write),
        check(DOUBLE, "f", host_view),
    ]
    (tmp_path / "visible").write_text("host")
    results = score(code_grader, *samples)
    assert not marker.exists(), "label code wrote on the host"
    # the writes worked inside the judge's own /tmp, and nothing of the host was visible there
    assert [r.reward for r in results] == [1.0] * 5, [r.detail for r in results]
    assert_clean(code_grader)


def test_label_code_cannot_reach_the_candidate(code_grader: CodeGrader) -> None:
    program = "import os\nopen('/tmp/candidate-was-here', 'w').write('1')\ndef f(x):\n    return 2 * x\n"
    test = (
        "import os\ndef check(candidate):\n    assert candidate(1) == 2\n"
        "    assert not os.path.exists('/tmp/candidate-was-here')\n"
    )
    (result,) = score(code_grader, check(program, "f", test))
    assert result.reward == 1.0, result.detail


HELPER_HACKS = [
    # HumanEval/32-style: the test checks the candidate's root with the label's poly
    (
        "import math\ndef poly(xs, x):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n",
        "def poly(xs, x):\n    return 0\ndef find_zero(xs):\n    return 12345.0\n",
        "find_zero",
        "def check(candidate):\n    for xs in ([1, 2], [-6, 11, -6, 1]):\n        assert abs(poly(xs, candidate(xs))) < 1e-4\n",
    ),
    # HumanEval/38-style: an identity encode_cyclic makes an identity decode pass
    (
        "def encode_cyclic(s):\n    groups = [s[3 * i:min(3 * i + 3, len(s))] for i in range((len(s) + 2) // 3)]\n"
        "    return ''.join((g[1:] + g[0]) if len(g) == 3 else g for g in groups)\n",
        "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s\n",
        "decode_cyclic",
        "def check(candidate):\n    for s in ('abcdef', 'hello world'):\n        assert candidate(encode_cyclic(s)) == s\n",
    ),
]


@pytest.mark.parametrize(("helpers", "program", "entry", "test"), HELPER_HACKS, ids=["poly", "encode_cyclic"])
def test_a_redefined_helper_does_not_win(
    code_grader: CodeGrader, helpers: str, program: str, entry: str, test: str
) -> None:
    (result,) = score(code_grader, check(program, entry, test, helpers=helpers))
    assert result.status is Status.OK and result.reward == 0.0, result.detail


def test_assert_helpers_come_from_the_label(code_grader: CodeGrader) -> None:
    is_prime = "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
    cheat = "def is_prime(n):\n    return True\ndef next_prime(n):\n    return n + 1\n"
    honest = "def next_prime(n):\n    n += 1\n    while not is_prime(n):\n        n += 1\n    return n\n"
    lines = ["assert is_prime(next_prime(7))", "assert is_prime(next_prime(13))"]
    cheated, fair = score(
        code_grader,
        asserts(cheat, "next_prime", lines, helpers=is_prime),
        asserts(honest, "next_prime", lines, helpers=is_prime),
    )
    assert cheated.reward == 0.0, cheated.detail
    assert fair.reward == 1.0, fair.detail


def test_a_test_that_needs_a_helper_the_label_lacks_is_invalid_input(code_grader: CodeGrader) -> None:
    program = "def is_prime(n):\n    return True\ndef next_prime(n):\n    return n + 1\n"
    results = score(
        code_grader,
        asserts(program, "next_prime", ["assert is_prime(next_prime(7))"]),
        asserts(program, "", ["assert is_prime(next_prime(7))"]),
        check(program, "next_prime", "def check(candidate):\n    assert is_prime(candidate(7))\n"),
    )
    assert [r.status for r in results] == [Status.INVALID_INPUT] * 3, [r.detail for r in results]
    assert all("is_prime" in r.detail and "helpers" in r.detail for r in results)


def test_mbpp_asserts_without_an_entry_point_still_work(code_grader: CodeGrader) -> None:
    lines = ["assert math.isclose(area(1), 3.14159, rel_tol=1e-3)", "assert set(area2(2)) == {4}"]
    program = "def area(r):\n    return 3.14159 * r * r\ndef area2(r):\n    return [r * r]\n"
    one, two = score(code_grader, asserts(program, "", lines[:1]), asserts(program, "", lines))
    assert one.reward == 1.0, one.detail
    assert two.status is Status.INVALID_INPUT and "entry_point" in two.detail


def test_a_reused_judge_keeps_nothing_of_the_last_label() -> None:
    """Label sandboxes serve samples one after another (a fresh fork each): nothing carries over."""
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=2))
    poison = (
        "import math, os, subprocess\nmath.pi = 3\nopen('left-behind', 'w').write('x')\nos.makedirs('d/e', exist_ok=True)\n"
        "if os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(60)\n"
        "def check(candidate):\n    assert candidate(1) == 2\n"
    )
    probe = (
        "import math, os\ndef check(candidate):\n    assert candidate(1) == 2\n    assert math.pi != 3\n"
        "    assert os.listdir('.') == []\n"
        "    others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]\n"
        "    assert others == [], others\n"
    )
    try:
        first, second = (score(grader, check(DOUBLE, "f", test))[0] for test in (poison, probe))
        assert grader._label_runs is not None and grader._label_runs._idle  # the judge was kept for reuse
        assert grader._label_runs._idle[0].uses == 2  # and served both samples
    finally:
        asyncio.run(grader.aclose())
    assert first.reward == 1.0 and second.reward == 1.0, (first.detail, second.detail)


@pytest.mark.parametrize(
    "body",
    [
        "    import os\n    os._exit(0)\n",
        "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    assert candidate(1) == 2\n",
        "    while True:\n        pass\n",
        "    import os\n    for fd in range(3, 64):\n        try:\n            os.close(fd)\n        except OSError:\n            pass\n",
    ],
    ids=["exits", "kills-the-zygote", "hangs", "closes-its-pipes"],
)
def test_a_hostile_label_fails_only_its_own_sample(code_grader: CodeGrader, body: str) -> None:
    hostile = check(DOUBLE, "f", "def check(candidate):\n" + body, time_limit_s=1.0)
    honest = check(DOUBLE, "f", "def check(candidate):\n    assert candidate(21) == 42\n")
    first, *after = score(code_grader, hostile, honest, honest, honest)
    assert first.status is Status.OK, first.detail  # its own verdict, whatever the label made of it
    assert [r.reward for r in after] == [1.0] * 3, [r.detail for r in after]
    assert_clean(code_grader)


def test_unsafe_mode_kills_only_its_own_runs() -> None:
    """Without bwrap there is no pid namespace: kill(-1) would reach the host's processes."""
    bystander = subprocess.Popen(
        ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60"]
    )
    grader = CodeGrader(CodeConfig(sandbox="unsafe", workers=1, warm_sandboxes=1))
    try:
        results = score(
            grader,
            stdio("print(3)", [("", "3\n")]),
            check(DOUBLE, "f", "def check(candidate):\n    assert candidate(1) == 2\n"),
        )
        assert [r.reward for r in results] == [1.0, 1.0], [r.detail for r in results]
        assert bystander.poll() is None, "a process outside the grader's runs was killed"
    finally:
        asyncio.run(grader.aclose())
        bystander.kill()
        bystander.wait()


# Label code that keeps the judge protocol going itself after its verdict, to answer for the
# samples after it (the "end", the ping, the next label's load and runs) as passes.
HIJACK = (
    "import os, stat, fcntl, struct, json\n"
    "def pipes(mode):\n"
    "    found = []\n"
    "    for fd in range(3, 64):\n"
    "        try:\n"
    "            if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == mode:\n"
    "                found.append(fd)\n"
    "        except OSError:\n"
    "            pass\n"
    "    return found\n"
    "def send(fd, obj):\n"
    "    body = json.dumps(obj, separators=(',', ':')).encode()\n"
    "    os.write(fd, struct.pack('>I', len(body)) + body)\n"
    "def check(candidate):\n"
    "    out, into = pipes(os.O_WRONLY)[0], pipes(os.O_RDONLY)[0]\n"
    "    send(out, {'done': True, 'passed': True})\n"
    "    while True:\n"
    "        size = struct.unpack('>I', os.read(into, 4))[0]\n"
    "        message = json.loads(os.read(into, size))\n"
    "        op = message.get('op')\n"
    "        if op == 'end':\n"
    "            send(out, {'ended': True, 'ready': True})\n"
    "        elif op == 'ping':\n"
    "            send(out, {'pong': message.get('nonce'), 'clean': True})\n"
    "        elif op == 'judge':\n"
    "            send(out, {'ok': True})\n"
    "        else:\n"
    "            send(out, {'done': True, 'passed': True})\n"
)


def test_label_code_cannot_answer_for_the_next_sample() -> None:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=2))
    wrong = "def f(x):\n    return 0\n"
    honest = "def check(candidate):\n    assert candidate(1) == 2\n"
    mem = (
        "import os\ndef check(candidate):\n    assert candidate(1) == 2\n    try:\n"
        "        open(f'/proc/{os.getppid()}/mem', 'r+b')\n    except PermissionError:\n        return\n"
        "    raise AssertionError('the zygote is writable')\n"
    )
    try:
        hijack, after, memory = (
            score(grader, sample)[0]
            for sample in (check(DOUBLE, "f", HIJACK), check(wrong, "f", honest), check(DOUBLE, "f", mem))
        )
    finally:
        asyncio.run(grader.aclose())
    assert hijack.status is Status.OK  # its own sample: the label's verdict, whatever it is
    assert after.reward == 0.0, after.detail  # a wrong program, judged by its own label
    assert memory.reward == 1.0, memory.detail  # the zygote's memory is out of the label's reach
