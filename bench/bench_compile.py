"""Fresh C++ compiles: Arbiter's way (the precompiled <bits/stdc++.h>, pch.py) against today's (a
plain `g++ -std=c++17 -O2`, what SandboxFusion runs and what Arbiter ran before), on generated
competitive-programming-style sources, side by side on the same machine.

    .venv/bin/python bench/bench_compile.py [--sources 24] [--rounds 3] [--calls 12] [--seed 7]

Two measures, each printed with its ratio (today / Arbiter; > 1: Arbiter is faster):

1. The compiler alone: each generated source compiled with both commands, in turns, as direct
   children of this process, so that their CPU time (user + sys of g++, cc1plus, as and ld, from
   wait4) is exact and does not depend on the machine's load. Per round the median CPU-s per
   compile of each side; the printed ratio is the median of the rounds' ratios.
2. End to end, as a caller sees it: `/run_code` requests (FusionRunner, in process), one fresh
   source per call, one at a time, against a code grader with `cxx_pch` on and one with it off;
   the wall time per call (compile in the sandbox, one run, the sandbox reset), in turns.

Sources: a random mix of the usual contest building blocks (fast input, sorting, maps and sets,
prefix sums, DSU, BFS/Dijkstra, a segment tree, DP tables, strings), each one distinct (so no
compile comes from any cache). `--plain-headers` sets the share of sources that include the
individual headers (<iostream>, <vector>, ...) instead of <bits/stdc++.h> (default 0.3).
"""

# ruff: noqa: E501  (generated programs stay one string per line of intent)

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.run_code import FusionRunner, RunCodeRequest

TODAY = ["/usr/bin/g++", "-std=c++17", "-O2"]

BLOCKS = {
    "sort": (
        "vector<long long> a(n); for (auto& x : a) cin >> x; sort(a.begin(), a.end());\n"
        "  long long best = 0; for (int i = 1; i < n; ++i) best = max(best, a[i] - a[i - 1]); ans += best;\n"
    ),
    "map": (
        "map<long long, int> cnt; for (int i = 0; i < n; ++i) { long long x; cin >> x; cnt[x % {K}]++; }\n"
        "  for (auto& [k, v] : cnt) ans += (long long)v * v % MOD;\n"
    ),
    "set": (
        "set<int> s; for (int i = 0; i < n; ++i) s.insert((i * {K}) % (n + 1));\n"
        "  auto it = s.lower_bound(n / 2); if (it != s.end()) ans += *it;\n"
    ),
    "prefix": (
        "vector<long long> p(n + 1); for (int i = 0; i < n; ++i) p[i + 1] = p[i] + (i ^ {K});\n"
        "  ans += p[n] - p[n / 2];\n"
    ),
    "dsu": (
        "DSU d(n); for (int i = 0; i + {K} < n; i += 2) d.unite(i, i + {K});\n"
        "  for (int i = 0; i < n; ++i) ans += d.find(i) == i;\n"
    ),
    "graph": (
        "vector<vector<pair<int, long long>>> g(n); for (int i = 1; i < n; ++i) g[i - 1].push_back({i, (i * {K}) % 7 + 1});\n"
        "  vector<long long> dist(n, LLONG_MAX); priority_queue<pair<long long, int>, vector<pair<long long, int>>, greater<>> pq;\n"
        "  if (n) { dist[0] = 0; pq.push({0, 0}); }\n"
        "  while (!pq.empty()) { auto [dd, u] = pq.top(); pq.pop(); if (dd != dist[u]) continue;\n"
        "    for (auto [v, w] : g[u]) if (dist[u] + w < dist[v]) { dist[v] = dist[u] + w; pq.push({dist[v], v}); } }\n"
        "  if (n) ans += dist[n - 1];\n"
    ),
    "segtree": (
        "Seg st(n); for (int i = 0; i < n; ++i) st.update(i, (i * {K}) % 1000);\n  ans += st.query(0, n);\n"
    ),
    "dp": (
        "vector<vector<long long>> dp(2, vector<long long>(n + 1)); dp[0][0] = 1;\n"
        "  for (int i = 1; i <= n; ++i) { dp[i & 1].assign(n + 1, 0); for (int j = 0; j <= min(i, {K}); ++j) dp[i & 1][j] = (dp[(i - 1) & 1][j] + (j ? dp[(i - 1) & 1][j - 1] : 0)) % MOD; }\n"
        "  ans += dp[n & 1][min(n, {K})];\n"
    ),
    "string": (
        "string s; for (int i = 0; i < n; ++i) s += char('a' + (i * {K}) % 26);\n"
        "  unordered_map<string, int> seen; for (int i = 0; i + 3 <= (int)s.size(); ++i) seen[s.substr(i, 3)]++;\n"
        '  ans += seen.size(); reverse(s.begin(), s.end()); ans += s.find("abc") != string::npos;\n'
    ),
}
HELPERS = {
    "dsu": "struct DSU { vector<int> p; DSU(int n) : p(n) { iota(p.begin(), p.end(), 0); }\n"
    "  int find(int x) { return p[x] == x ? x : p[x] = find(p[x]); }\n"
    "  void unite(int a, int b) { p[find(a)] = find(b); } };\n",
    "segtree": "struct Seg { int n; vector<long long> t; Seg(int n) : n(n), t(2 * n + 2) {}\n"
    "  void update(int i, long long v) { for (t[i += n] = v; i > 1; i >>= 1) t[i >> 1] = t[i] + t[i ^ 1]; }\n"
    "  long long query(int l, int r) { long long s = 0; for (l += n, r += n; l < r; l >>= 1, r >>= 1) {\n"
    "    if (l & 1) s += t[l++]; if (r & 1) s += t[--r]; } return s; } };\n",
}
PLAIN = (
    "#include <iostream>\n#include <vector>\n#include <algorithm>\n#include <map>\n#include <set>\n"
    "#include <string>\n#include <queue>\n#include <numeric>\n#include <climits>\n#include <unordered_map>\n"
)


def source(rng: random.Random, index: int, plain: bool) -> str:
    """One contest-style program: 3 to 5 building blocks, distinct constants (never a cache hit)."""
    chosen = rng.sample(sorted(BLOCKS), rng.randint(3, 5))
    head = PLAIN if plain else "#include <bits/stdc++.h>\n"
    lines = [head, "using namespace std;\n", f"const long long MOD = {1_000_000_007 + 2 * index};\n"]
    lines += [HELPERS[name] for name in chosen if name in HELPERS]
    lines.append(
        "int main() {\n  ios::sync_with_stdio(false); cin.tie(nullptr);\n  int n; if (!(cin >> n)) n = 10;\n  long long ans = 0;\n"
    )
    for name in chosen:
        lines.append("  { " + BLOCKS[name].replace("{K}", str(rng.randint(2, 97))) + "  }\n")
    lines.append('  cout << ans << "\\n";\n}\n')
    return "".join(lines)


def compile_cpu(argv: list[str], path: Path, out: Path) -> float:
    """CPU seconds (user + sys) of one compile and everything it ran, from wait4."""
    process = subprocess.Popen([*argv, "-o", str(out), str(path)], stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(
            f"{argv} failed on {path}: {process.stderr.read().decode() if process.stderr else ''}"
        )
    return usage.ru_utime + usage.ru_stime


def compiler_alone(sources: list[str], ours: list[str], rounds: int) -> None:
    ratios = []
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(rounds):
            today: list[float] = []
            arbiter: list[float] = []
            for index, text in enumerate(sources):
                path = Path(work) / f"s{round_}_{index}.cpp"
                path.write_text(text + f"// round {round_}\n")
                pair = [(TODAY, today), (ours, arbiter)]
                for argv, sink in pair if index % 2 == 0 else pair[::-1]:  # in turns
                    sink.append(compile_cpu(argv, path, Path(work) / "a.out"))
            ratio = statistics.median(today) / statistics.median(arbiter)
            ratios.append(ratio)
            print(
                f"  round {round_ + 1}: today {statistics.median(today):.3f} CPU-s per compile, "
                f"Arbiter {statistics.median(arbiter):.3f} CPU-s ({ratio:.2f}x)"
            )
    print(f"compiler alone: Arbiter compiles {statistics.median(ratios):.2f}x faster (CPU, median of rounds)")


def end_to_end(sources: list[str], calls: int, rounds: int) -> None:
    graders = {
        "today": CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, cxx_pch=False, compile_time_limit_s=120)),
        "arbiter": CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, compile_time_limit_s=120)),
    }
    graders["arbiter"]._pch.build(block=True)
    runners = {name: FusionRunner(grader) for name, grader in graders.items()}
    ratios = []
    try:
        for round_ in range(rounds):
            walls: dict[str, list[float]] = {"today": [], "arbiter": []}
            for index in range(calls):
                text = sources[index % len(sources)] + f"// call {round_}.{index}\n"
                order = ["today", "arbiter"] if index % 2 == 0 else ["arbiter", "today"]
                for name in order:
                    request = RunCodeRequest.model_validate(
                        {
                            "code": text,
                            "language": "cpp",
                            "stdin": "1000\n",
                            "compile_timeout": 120,
                            "run_timeout": 10,
                        }
                    )
                    started = time.perf_counter()
                    answer = runners[name].run(request)
                    walls[name].append(time.perf_counter() - started)
                    if answer["status"] != "Success":
                        raise RuntimeError(f"{name}: {answer}")
            ratio = statistics.median(walls["today"]) / statistics.median(walls["arbiter"])
            ratios.append(ratio)
            print(
                f"  round {round_ + 1}: today {statistics.median(walls['today']):.3f} s per call, "
                f"Arbiter {statistics.median(walls['arbiter']):.3f} s ({ratio:.2f}x)"
            )
    finally:
        for grader in graders.values():
            asyncio.run(grader.aclose())
    print(
        f"/run_code, a fresh C++ source per call: Arbiter {statistics.median(ratios):.2f}x faster (wall, median of rounds)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=12, help="/run_code calls per side and round (0: skip)")
    parser.add_argument("--plain-headers", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sources = [source(rng, index, rng.random() < args.plain_headers) for index in range(args.sources)]
    grader = CodeGrader(CodeConfig())
    grader._pch.build(block=True)
    ours = grader.native_build("cpp").argv
    print(f"today: {' '.join(TODAY)}\nArbiter: {' '.join(ours)}")
    print(f"{len(sources)} sources, {sum('bits/stdc++' in s for s in sources)} with <bits/stdc++.h>")
    compiler_alone(sources, ours, args.rounds)
    if args.calls:
        end_to_end(sources, args.calls, args.rounds)


if __name__ == "__main__":
    main()
