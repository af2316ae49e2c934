"""Math grader benchmark: Arbiter's MathGrader vs Math-Verify on a GRPO-shaped workload,
and both graders' agreement with labelled corpora.

    .venv/bin/python bench/bench_math.py [--refs 64] [--per-ref 16] [--seed 0] [--mv-sample 1]

Agreement is printed for the labelled corpora: the hand-written cases
(tests/reward_rules/math_corpus.py and test_math_answers.py), the probes, the generated
differential corpus (tests/reward_rules/math_gen/corpus.jsonl), the real-output-style
corpus (tests/reward_rules/math_gen/real_style.py: multiple choice with the options in
the prompt, answer blocks, closing sentences, long chain-of-thought, cut-off responses,
tool outputs, hedges; per category too) and the development set
(../shared/corpora/math_extraction_dev.jsonl, when present). `--mv-sample N` grades
every N-th differential and real-style case with Math-Verify (it takes minutes on all
of them). Math-Verify gets no prompt: it has no notion of options.

Workload: `refs` references x `per_ref` long chain-of-thought responses each (like one
GRPO step with n_samples_per_prompt = per_ref), a mix of right answers in other forms,
wrong answers, responses without a final answer and pathological answers. Every
sample carries its true label, so both graders get an agreement score.

Ours runs as the kit runs it (`await grader.score(batch)`, batches of 64, its worker
pool on all cores); Math-Verify as its docs show, `verify(parse(gold), parse(pred))`
in the main thread (so its signal timeouts work). Math-Verify is a bench-only
dependency: `pip install 'math-verify[antlr4_13_2]'`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathConfig, MathGrader
from testkit.procs import percentile

ROOT = Path(__file__).resolve().parents[1]
DEV_SET = ROOT.parent / "shared" / "corpora" / "math_extraction_dev.jsonl"


@dataclass(frozen=True)
class Problem:
    gold: str
    right: tuple[str, ...]
    wrong: tuple[str, ...]


BASE: list[Problem] = [
    Problem(
        "\\frac{3}{4}", ("0.75", "\\dfrac34", "3/4", "\\frac{6}{8}"), ("\\frac43", "0.7", "\\frac{3}{5}")
    ),
    Problem("2\\sqrt{2}", ("\\sqrt{8}", "2 \\sqrt 2", "2^{3/2}"), ("\\sqrt{2}", "4\\sqrt2", "2.8")),
    Problem("\\frac{\\pi}{3}", ("\\frac{1}{3}\\pi", "\\pi/3"), ("\\frac{\\pi}{6}", "60", "\\frac{2\\pi}{3}")),
    Problem("(x+1)^2", ("x^2+2x+1", "1+2x+x^2"), ("x^2+1", "(x-1)^2")),
    Problem("(1, 2]", ("\\left(1, 2\\right]", "(1,2]"), ("(1,2)", "[1,2]")),
    Problem("\\{1, 3\\}", ("\\{3, 1\\}", "1, 3", "x=1 \\text{ or } x=3"), ("\\{1\\}", "\\{1, 2\\}")),
    Problem(
        "(3, -\\frac{1}{2})", ("(3, -0.5)", "\\left(3,-\\frac12\\right)"), ("(-\\frac12, 3)", "(3, \\frac12)")
    ),
    Problem("1-\\frac{1}{e}", ("1-e^{-1}", "\\frac{e-1}{e}"), ("1+\\frac{1}{e}", "1")),
    Problem("\\frac{1}{2^{99}}", ("2^{-99}", "\\frac{1}{2^{99}}"), ("\\frac{1}{2^{98}}", "0")),
    # The default percent rule: a percent sign is a unit (25% answers 25, not 0.25).
    Problem("25\\%", ("25\\%", "25", "25.0\\%"), ("2.5\\%", "0.025", "0.25")),
    Problem("x > 3", ("(3, \\infty)", "3 < x"), ("x \\ge 3", "[3,\\infty)")),
    Problem("3+4i", ("4i+3", "3 + 4\\mathrm{i}"), ("3-4i", "5")),
    Problem(
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        ("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}",),
        ("\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",),
    ),
    Problem("\\text{Monday}", ("Monday", "\\text{monday}"), ("Tuesday",)),
]

PATHOLOGICAL = (
    "\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}",
    "10^{10^{10^{10}}}",
    "(10^{100})!",
    "9^{9^{9^{9}}}-9^{9^{9^{9}}}",
)

FILLER = [
    "Let me set up the problem carefully.",
    "We know that $a + b = {n}$ and $ab = {m}$, so $a^2 + b^2 = (a+b)^2 - 2ab$.",
    "Wait, let me double-check the arithmetic: ${n} \\times 2 = {k}$.",
    "Substituting back, we get $x = \\frac{{{n}}}{{{m}}}$, which simplifies further.",
    "Actually, I should reconsider the constraint on $x$.",
    "By the AM-GM inequality, $\\frac{{a+b}}{{2}} \\ge \\sqrt{{ab}}$.",
    "Hmm, that gives {n} so far, but we still need the second case.",
    "Therefore the intermediate value is ${m}$, and we continue.",
]


def chain_of_thought(rng: random.Random, sentences: int) -> str:
    lines = []
    for _ in range(sentences):
        template = rng.choice(FILLER)
        n, m = rng.randint(2, 999), rng.randint(2, 999)
        lines.append(template.replace("{n}", str(n)).replace("{m}", str(m)).replace("{k}", str(2 * n)))
    return " ".join(lines)


def make_workload(refs: int, per_ref: int, seed: int) -> tuple[list[Sample], list[bool]]:
    rng = random.Random(seed)
    samples: list[Sample] = []
    truth: list[bool] = []
    for r in range(refs):
        if r % 2 == 0:  # GSM8K/MATH-style integer answers, half of the references
            value = rng.randint(-50, 5000)
            problem = Problem(
                str(value),
                (f"{value:,}", f"{value}.0", f"{value}\\text{{ apples}}"),
                (str(value + 1), str(-value - 1), f"{value}0"),
            )
        else:
            problem = BASE[(r // 2) % len(BASE)]
        label = problem.gold
        for _ in range(per_ref):
            roll = rng.random()
            reasoning = chain_of_thought(rng, rng.randint(15, 60))
            if roll < 0.45:
                answer, correct = rng.choice(problem.right), True
            elif roll < 0.85:
                answer, correct = rng.choice(problem.wrong), False
            elif roll < 0.97:
                samples.append(Sample(response=f"<think>{reasoning}", label=label))  # truncated: no answer
                truth.append(False)
                continue
            else:
                answer, correct = rng.choice(PATHOLOGICAL), False
            ending = rng.choice(
                [
                    f"Therefore, the final answer is $\\boxed{{{answer}}}$.",
                    f"So the answer is $\\boxed{{{answer}}}$",
                    f"**Final Answer**\n\\[\\boxed{{{answer}}}\\]",
                ]
            )
            samples.append(
                Sample(response=f"<think>{reasoning}</think>\n{reasoning[:400]}\n\n{ending}", label=label)
            )
            truth.append(correct)
    return samples, truth


async def run_ours(samples: list[Sample], batch: int) -> tuple[list[bool], float, list[float], int, int]:
    grader = MathGrader(MathConfig())
    try:
        await grader.score([Sample(response="\\boxed{1}", label="1")])  # start the workers
        verdicts: list[bool] = []
        latencies: list[float] = []
        timeouts = 0
        hangs = 0
        start = time.perf_counter()
        for i in range(0, len(samples), batch):
            t0 = time.perf_counter()
            results = await grader.score(samples[i : i + batch])
            elapsed = time.perf_counter() - t0
            latencies.extend([elapsed] * len(results))
            hangs += sum(1 for _ in results) if elapsed > grader.config.deadline_s + 1.0 else 0
            timeouts += sum(1 for r in results if r.status == Status.TIMEOUT)
            verdicts.extend(r.score == 1.0 for r in results)
        return verdicts, time.perf_counter() - start, latencies, timeouts, hangs
    finally:
        await grader.aclose()


def _mv_gold(label: str) -> str:
    """A reference as Math-Verify's docs pass it: LaTeX inside math delimiters."""
    bare = label.replace(",", "").replace(".", "").lstrip("-")
    if bare.isdigit() or label.startswith(("$", "\\(", "\\[")) or "\\boxed" in label:
        return label
    return f"${label}$"


def run_math_verify(samples: list[Sample]) -> tuple[list[bool], float, int, list[float]]:
    import logging

    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    verdicts: list[bool] = []
    errors = 0
    each: list[float] = []
    start = time.perf_counter()
    for sample in samples:
        t0 = time.perf_counter()
        try:
            verdicts.append(bool(verify(parse(_mv_gold(sample.label)), parse(sample.response))))
        except Exception:
            errors += 1
            verdicts.append(False)
        each.append(time.perf_counter() - t0)
    return verdicts, time.perf_counter() - start, errors, each


def agreement(verdicts: list[bool], truth: list[bool]) -> float:
    return sum(v == t for v, t in zip(verdicts, truth, strict=True)) / len(truth)


def labelled_corpora(mv_sample: int) -> list[tuple[str, list[Sample], list[bool], int, list[str]]]:
    """(name, samples, labels, Math-Verify stride, categories) for every labelled corpus at hand."""
    from tests.reward_rules.math_corpus import CASES
    from tests.reward_rules.math_gen.generate import CORPUS
    from tests.reward_rules.math_gen.real_style import generate as real_style
    from tests.reward_rules.math_probes import PROBES
    from tests.reward_rules.test_math_answers import CASES as ANSWERS

    hand = [("", label, response, correct) for _, label, response, correct in CASES + ANSWERS]
    corpora = [("hand-written", hand, 1, False)]
    probes = [("", label, response, correct) for _, label, response, correct in PROBES]
    corpora.append(("probes", probes, 1, False))
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    generated = [("", r["reference"], r["response"], r["expected"]) for r in rows]
    corpora.append(("differential", generated, mv_sample, False))
    cases = real_style(0)
    styled = [(c.prompt, c.reference, c.response, c.expected) for c in cases]
    corpora.append(("real-style", styled, mv_sample, True))
    if DEV_SET.exists():
        rows = [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines()]
        dev = [("", r["reference"], r["response"], r["expected"]) for r in rows]
        corpora.append(("dev set", dev, 1, False))
    return [
        (
            name,
            [Sample(prompt=p, response=r, label=label) for p, label, r, _ in rows_],
            [c for *_, c in rows_],
            stride,
            [c.category for c in cases] if by_category else [],
        )
        for name, rows_, stride, by_category in corpora
    ]


def _rates(verdicts: list[bool], truth: list[bool]) -> str:
    right = sum(truth) or 1
    wrong = (len(truth) - sum(truth)) or 1
    missed = sum(t and not v for v, t in zip(verdicts, truth, strict=True))
    paid = sum(v and not t for v, t in zip(verdicts, truth, strict=True))
    share = agreement(verdicts, truth)
    return f"{share:6.1%} (right missed {missed / right:5.1%}, wrong paid {paid / wrong:5.1%})"


def report_agreement(mv_sample: int) -> None:
    """Agreement with the labels: this grader on every case, Math-Verify on every stride-th."""
    for name, samples, truth, stride, categories in labelled_corpora(mv_sample):
        ours, _, _, _, _ = asyncio.run(run_ours(samples, 256))
        subset = list(range(0, len(samples), stride))
        theirs, _, _, _ = run_math_verify([samples[i] for i in subset])
        sub_truth = [truth[i] for i in subset]
        ours_sub = [ours[i] for i in subset]
        if categories:
            mv_by_index = dict(zip(subset, theirs, strict=True))
            for category in dict.fromkeys(categories):
                picked = [i for i, c in enumerate(categories) if c == category]
                mv_picked = [i for i in picked if i in mv_by_index]
                line = f"  {name} {category:17s} n={len(picked):5d}  arbiter " + _rates(
                    [ours[i] for i in picked], [truth[i] for i in picked]
                )
                if mv_picked:
                    mv_line = _rates([mv_by_index[i] for i in mv_picked], [truth[i] for i in mv_picked])
                    line += f"  math-verify {mv_line}"
                print(line)
        paid = sum(o and not t for o, t in zip(ours, truth, strict=True))
        missed = sum(t and not o for o, t in zip(ours, truth, strict=True))
        mv_paid = sum(o and not t for o, t in zip(theirs, sub_truth, strict=True))
        mv_missed = sum(t and not o for o, t in zip(theirs, sub_truth, strict=True))
        print(
            f"agreement {name:13s}: arbiter {agreement(ours, truth):6.1%} "
            f"({sum(o == t for o, t in zip(ours, truth, strict=True))}/{len(truth)}; "
            f"wrong paid {paid}, right missed {missed})   math-verify {agreement(theirs, sub_truth):6.1%} "
            f"({sum(o == t for o, t in zip(theirs, sub_truth, strict=True))}/{len(sub_truth)}; "
            f"wrong paid {mv_paid}, right missed {mv_missed})"
            + (f"  [arbiter on the same subset {agreement(ours_sub, sub_truth):6.1%}]" if stride > 1 else "")
        )
        print(f"  {name}: arbiter {_rates(ours, truth)}   math-verify {_rates(theirs, sub_truth)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--refs", type=int, default=64)
    parser.add_argument("--per-ref", type=int, default=16)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mv-sample", type=int, default=1, help="Math-Verify on every N-th generated case")
    parser.add_argument("--no-agreement", action="store_true", help="throughput only")
    args = parser.parse_args()

    samples, truth = make_workload(args.refs, args.per_ref, args.seed)
    chars = statistics.mean(len(s.response) for s in samples)
    print(
        f"workload: {args.refs} refs x {args.per_ref} responses = {len(samples)} samples, "
        f"mean response {chars:.0f} chars, {sum(truth)} correct"
    )

    ours, ours_s, latencies, timeouts, hangs = asyncio.run(run_ours(samples, args.batch))
    theirs, theirs_s, errors, each = run_math_verify(samples)
    plain = [t for t, s in zip(each, samples, strict=True) if not any(p in s.response for p in PATHOLOGICAL)]

    ours_rate, theirs_rate = len(samples) / ours_s, len(samples) / theirs_s
    print(
        f"arbiter math : {ours_rate:8.1f} samples/s  agreement {agreement(ours, truth):6.1%}  "
        f"p50 {percentile(latencies, 0.5) * 1000:.0f} ms  p99 {percentile(latencies, 0.99) * 1000:.0f} ms "
        f"(per batch of {args.batch})  timeouts {timeouts}  hangs {hangs}"
    )
    print(
        f"math-verify  : {theirs_rate:8.1f} samples/s  agreement {agreement(theirs, truth):6.1%}  "
        f"errors {errors}  p99 {percentile(each, 0.99) * 1000:.0f} ms  "
        f"(without pathological samples: {len(plain) / sum(plain):.1f} samples/s)"
    )
    print(f"speedup      : {ours_rate / theirs_rate:8.1f}x")
    if not args.no_agreement:
        report_agreement(max(1, args.mv_sample))


if __name__ == "__main__":
    main()
