"""Hostile programs: each is scored as it deserves, and leaves nothing behind for the next run."""

# ruff: noqa: E501  (candidate programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import (
    assert_clean,
    asserts,
    call,
    check,
    code_grader,
    rss_mb,
    score,
    stdio,
)

__all__ = ["code_grader"]

ADD = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"


def _healthy_after(grader: CodeGrader) -> None:
    """The next run is unaffected and nothing of the hostile one survives."""
    (result,) = score(grader, stdio(ADD, [("1 2\n", "3\n"), ("5 6\n", "11\n")]))
    assert result.reward == 1.0, result.detail
    assert_clean(grader)


@pytest.mark.parametrize(
    ("name", "program", "reason"),
    [
        (
            "fork bomb",
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
            "timeout",
        ),
        ("cpu spin", "while True:\n    pass\n", "timeout"),
        ("sleep forever", "import time\ntime.sleep(10**6)\n", "timeout"),
        (
            "ignores signals",
            "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):\n"
            "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n",
            "timeout",
        ),
        ("stops itself", "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\nprint(3)\n", "timeout"),
        ("memory bomb", "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n", "memory limit"),
        (
            "100 MB stdout",
            "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n",
            "output limit",
        ),
        ("invalid utf-8", "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe3\\n')\n", "wrong answer"),
        ("exits 1 after a right answer", "print(3)\nimport sys\nsys.exit(1)\n", "runtime error"),
        (
            "atexit hook rewrites the status",
            "import atexit, os\natexit.register(lambda: os._exit(0))\nprint(3)\nraise SystemExit(3)\n",
            "runtime error",
        ),
        (
            "kills its harness",
            "import os, signal\nprint(3, flush=True)\nos.kill(os.getppid(), signal.SIGKILL)\n",
            "runtime error",
        ),
        (
            "kills everything it can",
            "import os, signal\nprint(3, flush=True)\nos.kill(-1, signal.SIGKILL)\n",
            "runtime error",
        ),
    ],
)
def test_stdio_hostile_program_fails(code_grader: CodeGrader, name: str, program: str, reason: str) -> None:
    (result,) = score(code_grader, stdio(program, [("1 2\n", "3\n")], time_limit_s=1.0, memory_limit_mb=128))
    assert result.reward == 0.0 and result.score == 0.0, result.detail
    assert reason in result.detail, result.detail
    _healthy_after(code_grader)


def test_fork_bomb_is_contained_by_pids_limit(code_grader: CodeGrader) -> None:
    program = (
        "import os, time\ncount = 0\ntry:\n    for _ in range(10000):\n        if os.fork() == 0:\n"
        "            time.sleep(60)\n        count += 1\nexcept OSError:\n    pass\nprint('capped' if count < 200 else count)\n"
    )
    (result,) = score(code_grader, stdio(program, [("", "capped\n")], time_limit_s=3.0))
    assert result.reward == 1.0, result.detail
    _healthy_after(code_grader)


def test_memory_bomb_in_a_function_is_a_memory_kill(code_grader: CodeGrader) -> None:
    program = "def f(n):\n    x = []\n    while True:\n        x.append(bytearray(1 << 24))\n"
    (result,) = score(code_grader, call(program, "f", [([1], 1)], memory_limit_mb=128))
    assert result.reward == 0.0
    assert "memory limit" in result.detail and result.logs["code/memory_kills"] == 1.0, result.detail
    _healthy_after(code_grader)


def test_stderr_flood_before_a_right_answer_passes(code_grader: CodeGrader) -> None:
    program = "import sys\nsys.stderr.write('e' * (2 << 20))\nprint(3)\n"
    before = rss_mb()
    (result,) = score(code_grader, stdio(program, [("1 2\n", "3\n")]))
    assert result.reward == 1.0, result.detail
    assert rss_mb() - before < 100
    _healthy_after(code_grader)


def test_chatty_function_does_not_block(code_grader: CodeGrader) -> None:
    program = "import sys\ndef f(a):\n    print('x' * (4 << 20))\n    sys.stderr.write('y' * (4 << 20))\n    return a\n"
    (result,) = score(code_grader, call(program, "f", [([7], 7)]))
    assert result.reward == 1.0, result.detail
    _healthy_after(code_grader)


def test_disk_fill_stays_in_the_capped_tmpfs(code_grader: CodeGrader) -> None:
    program = (
        "import os\nwritten = 0\ntry:\n    with open('fill', 'wb') as f:\n        while written < 1 << 31:\n"
        "            f.write(b'0' * (1 << 20))\n            written += 1 << 20\nexcept OSError:\n    pass\n"
        "print('capped' if written < 1 << 30 else 'unbounded')\n"
    )
    free_before = shutil.disk_usage("/").free
    (result,) = score(code_grader, stdio(program, [("", "capped\n")], time_limit_s=5.0))
    assert result.reward == 1.0, result.detail
    assert shutil.disk_usage("/").free > free_before - (200 << 20)
    _healthy_after(code_grader)


def test_double_forked_daemon_is_killed(code_grader: CodeGrader) -> None:
    program = (
        "import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        while True:\n            time.sleep(0.01)\n    os._exit(0)\nos.wait()\nprint(3)\n"
    )
    (result,) = score(code_grader, stdio(program, [("1 2\n", "3\n")]))
    assert result.reward == 1.0, result.detail
    _healthy_after(code_grader)


def test_network_connect_to_host_listener_fails(code_grader: CodeGrader) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    accepted: list[object] = []
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    program = (
        "import socket\nreached = 0\nfor host in ('127.0.0.1', '10.0.2.2', '8.8.8.8', '::1'):\n    try:\n"
        f"        socket.create_connection((host, {port}), timeout=0.5).close()\n        reached += 1\n"
        "    except OSError:\n        pass\nprint(reached)\n"
    )
    try:
        (result,) = score(code_grader, stdio(program, [("", "0\n")], time_limit_s=5.0))
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert result.reward == 1.0, result.detail
    assert accepted == []
    _healthy_after(code_grader)


def test_no_secret_from_the_grader_environment(
    code_grader: CodeGrader, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-arbiter-test-secret-9f31"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    os.environ["OPENAI_API_KEY"] = secret
    program = (
        "import os\nseen = ' '.join(f'{k}={v}' for k, v in os.environ.items())\nfor pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n        for name in ('environ', 'cmdline'):\n            try:\n"
        "                seen += open(f'/proc/{pid}/{name}', 'rb').read().decode('latin-1')\n"
        "            except OSError:\n                pass\n"
        "print('leak' if 'sk-arbiter' in seen or 'OPENAI' in seen else 'clean')\n"
    )
    grader = code_grader
    (result,) = score(grader, stdio(program, [("", "clean\n")]))
    assert result.reward == 1.0, result.detail
    _healthy_after(grader)


def test_host_files_are_out_of_reach(code_grader: CodeGrader, tmp_path: Path) -> None:
    marker = tmp_path / "host-file"
    marker.write_text("host")
    escape = Path("/tmp/arbiter-code-escape-marker")
    program = (
        "import os\nwrote = []\nfor path in ('/etc/x', '/usr/x', '/x', '/home/x', '/work/x', '/proc/x', '/dev/x',"
        f" '/root/x', '/var/x', '/sys/x', {str(escape)!r}):\n    try:\n"
        "        with open(path, 'w') as f:\n            f.write('x')\n        wrote.append(path)\n    except OSError:\n"
        "        pass\n"
        f"seen = [p for p in ('/work', '/root', '/home', '/etc/passwd', '/etc/shadow', {str(marker)!r}, '/sys/fs/cgroup')"
        " if os.path.exists(p)]\n"
        "print(' '.join(w for w in wrote if not w.startswith('/tmp')) or 'none', ' '.join(seen) or 'none')\n"
    )
    (result,) = score(code_grader, stdio(program, [("", "none none\n")]))
    assert result.reward == 1.0, result.detail
    assert not escape.exists()
    _healthy_after(code_grader)


def test_nothing_from_one_run_reaches_the_next(code_grader: CodeGrader) -> None:
    writer = (
        "import os\nopen('answer', 'w').write('3')\nopen('/tmp/answer2', 'w').write('3')\nprint('written')\n"
    )
    reader = (
        "import os\nfound = [p for p in ('answer', '/tmp/answer', '/tmp/answer2') if os.path.exists(p)]\n"
        "print(' '.join(found) or 'nothing')\n"
    )
    (first,) = score(code_grader, stdio(writer, [("", "written\n")]))
    (second,) = score(code_grader, stdio(reader, [("", "nothing\n")]))
    assert first.reward == 1.0 and second.reward == 1.0, (first.detail, second.detail)
    _healthy_after(code_grader)


def test_exit_tricks_in_function_tests_fail(code_grader: CodeGrader) -> None:
    at_load = check(
        "def f(x):\n    return 0\nexit(0)\n", "f", "def check(candidate):\n    assert candidate(1) == 2\n"
    )
    in_call = call("import os\ndef f(x):\n    os._exit(0)\n", "f", [([1], 2)])
    raising = asserts("def f(x):\n    raise SystemExit(0)\n", "f", ["assert f(1) == 2"])
    results = score(code_grader, at_load, in_call, raising)
    assert [r.reward for r in results] == [0.0, 0.0, 0.0], [r.detail for r in results]
    assert "SystemExit" in results[0].detail and "SystemExit" in results[2].detail
    _healthy_after(code_grader)


@pytest.mark.parametrize(
    "program",
    [
        "class E:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\ndef f(x):\n    return E()\n",
        "class I(int):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\ndef f(x):\n    return I(0)\n",
        "import builtins\nbuiltins.abs = lambda x: 0\ndef f(x):\n    return -1000\n",
        "def abs(x):\n    return 0\ndef f(x):\n    return -1000\n",
        "import sys\ndef f(x):\n    frame = sys._getframe()\n    while frame is not None:\n"
        "        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):\n"
        "            if isinstance(value, int) and value == 2 * x:\n                return value\n"
        "        frame = frame.f_back\n    return -1\n",
        "import gc\ndef f(x):\n    for obj in gc.get_objects():\n        if isinstance(obj, dict) and 'expected' in obj:\n"
        "            return obj['expected']\n    return -1\n",
    ],
    ids=["always-equal", "int-subclass", "patched-builtins-abs", "own-abs", "stack-peek", "gc-peek"],
)
def test_equality_and_introspection_hacks_fail(code_grader: CodeGrader, program: str) -> None:
    test = "def check(candidate):\n    assert abs(candidate(21) - 42) < 1e-9\n    assert candidate(5) == 10\n"
    samples = [
        check(program, "f", test),
        call(program, "f", [([21], 42), ([5], 10)]),
        asserts(program, "f", ["assert f(21) == 42", "assert abs(f(5) - 10) < 1e-9"]),
    ]
    results = score(code_grader, *samples)
    assert [r.reward for r in results] == [0.0, 0.0, 0.0], [r.detail for r in results]
    _healthy_after(code_grader)


def test_stop_iteration_cannot_end_a_check_early(code_grader: CodeGrader) -> None:
    program = "def f(x):\n    raise StopIteration\n"
    test = "def check(candidate):\n    assert all(map(lambda x: candidate(x) == x, [1, 2, 3]))\n"
    (result,) = score(code_grader, check(program, "f", test))
    assert result.reward == 0.0, result.detail
    _healthy_after(code_grader)


def test_a_daemon_of_one_test_cannot_answer_the_next(code_grader: CodeGrader) -> None:
    """Test 1 leaves a daemon that writes "42" into every new process's stdout; test 2 prints
    nothing itself. The tests of a sample run in one sandbox: the daemon must be gone by then."""
    program = (
        "import os, sys, time\n"
        "if sys.stdin.read().strip() == '1':\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            seen = set(os.listdir('/proc'))\n"
        "            end = time.time() + 5\n"
        "            while time.time() < end:\n"
        "                for p in os.listdir('/proc'):\n"
        "                    if p.isdigit() and p not in seen:\n"
        "                        seen.add(p)\n"
        "                        try:\n"
        "                            fd = os.open(f'/proc/{p}/fd/1', os.O_WRONLY)\n"
        "                            os.write(fd, b'42\\n')\n"
        "                            os.close(fd)\n"
        "                        except OSError:\n"
        "                            pass\n"
        "                time.sleep(0.001)\n"
        "        os._exit(0)\n"
        "    os.wait()\n"
        "    print(1)\n"
        "else:\n"
        "    time.sleep(0.5)\n"
    )
    (result,) = score(code_grader, stdio(program, [("1\n", "1\n"), ("2\n", "42\n")]))
    assert result.score == 0.5 and "case 2: wrong answer" in result.detail, result.detail
    _healthy_after(code_grader)


def test_files_of_one_test_are_gone_for_the_next(code_grader: CodeGrader) -> None:
    """A test's files (a memo of work done, a full tmpfs) do not reach the sample's next test."""
    program = (
        "import os, sys\n"
        "os.chmod('.', 0o500) if sys.stdin.read().strip() == '3' else None\n"
        "found = os.path.exists('memo') or os.path.exists('locked')\n"
        "try:\n"
        "    with open('memo', 'wb') as f:\n"
        "        f.write(b'x' * (40 << 20))\n"
        "    os.makedirs('locked/inner')\n"
        "    open('locked/inner/f', 'w').close()\n"
        "    os.chmod('locked/inner', 0)\n"
        "    os.chmod('locked', 0)\n"
        "    print('kept' if found else 'fresh')\n"
        "except OSError as exc:\n"
        "    print('refused' if found else type(exc).__name__)\n"
    )
    cases = [("1\n", "fresh\n"), ("2\n", "fresh\n"), ("3\n", "PermissionError\n"), ("4\n", "fresh\n")]
    (result,) = score(code_grader, stdio(program, cases))
    assert result.reward == 1.0, result.detail
    _healthy_after(code_grader)


def test_a_run_cannot_reach_into_the_harness_even_unsealed() -> None:
    """Without sandbox reuse (no seal), the harness still makes itself undumpable before the first
    run: a test's process cannot open its memory or its fds to change how a later test is judged
    or to write replies on its pipe."""
    program = (
        "import os\nfound = []\nfor path in ('mem', 'fd/0', 'fd/1', 'fd/3', 'fd/4'):\n"
        "    try:\n        os.close(os.open(f'/proc/{os.getppid()}/{path}', os.O_RDWR))\n        found.append(path)\n"
        "    except OSError:\n        pass\nprint(' '.join(found) or 'refused')\n"
    )
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, reuse_sandboxes=False))
    try:
        (result,) = score(grader, stdio(program, [("", "refused\n"), ("", "refused\n")]))
        assert result.reward == 1.0, result.detail
    finally:
        asyncio.run(grader.aclose())
