"""The served judge with an upstream that refuses connections (the fuzz suites' setup): once its
breaker opens, a batch is answered by one failed half-open probe, never held to its deadline.

Before, every sample waiting on a failed probe waited for the next probe's turn (probe_interval_s)
and the batch's samples probed one per turn until the deadline: most of them were TIMEOUTs and a
fuzz run of the judge took minutes."""

from __future__ import annotations

import httpx

from tests.reliability.served import judge_server, serve_in_thread


def test_a_paused_upstream_fails_a_batch_on_one_probe_not_at_the_deadline() -> None:
    with (
        serve_in_thread("judge_proxy", judge_server) as served,
        httpx.Client(base_url=served.http_url, timeout=30) as client,
    ):
        for round_no in range(3):  # the first opens the breaker; later batches meet a paused upstream
            samples = [
                {"prompt": "Q", "response": f"answer {round_no} {i}", "label": "ref"} for i in range(8)
            ]
            reply = client.post("/v1/score", json={"samples": samples})
            assert reply.status_code == 200, reply.text
            statuses = [result["status"] for result in reply.json()["results"]]
            assert "TIMEOUT" not in statuses, statuses
            assert set(statuses) == {"UPSTREAM_ERROR"}, statuses
