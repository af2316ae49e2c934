"""`arbiter`: serve the services, or score a file with the same graders, in-process.

The services load inside each command, not here: `arbiter score --grader math` starts the math
grader's fork server before it pays for them (see `main`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from services.settings_tree import ArbiterSettings

# catalog.SERVICES, named here so that loading the CLI loads no service (tests/test_cli.py checks)
SERVICE_NAMES = ("reward_rules", "judge_proxy", "reward_rm", "gateway")
# Graders that send samples to the math grader's worker pool (reward_rules: its reference grader)
_MATH_GRADERS = frozenset({"math", "reward_rules"})

app = typer.Typer(
    name="arbiter",
    help="Reward services for RL post-training (OpenRLHF, veRL, TRL).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, soft_wrap=True)

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML settings file (else ARBITER_CONFIG)", exists=True)
]


def _settings(config: Path | None) -> ArbiterSettings:
    from services.common.logs import configure_logging
    from services.settings_tree import load

    try:
        settings = load(config)
    except Exception as exc:  # pydantic's message names the bad field
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from exc
    configure_logging(settings.log.level, settings.log.json_format)
    return settings


@app.command()
def serve(
    services: Annotated[
        list[str] | None,
        typer.Argument(help=f"services to start (default: all of {', '.join(SERVICE_NAMES)})"),
    ] = None,
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option(help="bind address for every service started")] = None,
    ray: Annotated[
        bool,
        typer.Option("--ray", help="deploy on Ray Serve (deploy/ray_serve.yaml), the gateway as ingress"),
    ] = False,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join with --ray (e.g. auto); default: a local Ray")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=64,
            help="processes serving the same ports, merged /metrics (0: one per CPU; default: settings, 1)",
        ),
    ] = None,
) -> None:
    """Start services in this process (all of them by default) on embedded defaults."""
    from services import launch
    from services.transports.auth import AuthConfigError  # gRPC loads only to serve

    settings = _settings(config)
    if workers is not None:
        settings.workers = workers
    if ray:
        from services.ray_serve import serve_until_signalled

        serve_until_signalled(config, ray_address, host)
        return
    try:
        names, skipped = launch.runnable(settings, services)
    except launch.UnknownServiceError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from exc
    for name, reason in skipped.items():
        err.print(f"{name} skipped: {escape(reason)}")

    def announce(servers: Sequence[launch.Served]) -> None:
        for s in servers:
            info = s.info
            err.print(
                f"[bold green]{s.name}[/bold green] ({info.name} {info.version}, "
                f"config {info.config_hash}) http {s.http_url}  grpc {s.grpc_target or 'off'}"
            )
            err.print(f"    OpenRLHF: --reward.remote_url {s.http_url}/get_reward")
        err.print("press Ctrl+C to stop")

    try:
        launch.run(launch.serve(settings, names, host, announce))
    except (OSError, AuthConfigError) as exc:
        err.print(f"[red]cannot start:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc


@app.command()
def score(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="INPUT", help="JSONL, JSON, CSV or Parquet of samples", exists=True, dir_okay=False
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL written with the results (resumed)")],
    grader: Annotated[
        str, typer.Option(help="a service name (gateway: its recipes) or one grader")
    ] = "reward_rules",
    prompt_key: Annotated[str, typer.Option(help="column with the prompt")] = "prompt",
    response_key: Annotated[str, typer.Option(help="column with the response")] = "response",
    label_key: Annotated[str, typer.Option(help="column with the label (reference)")] = "label",
    prompt_id_key: Annotated[
        str | None,
        typer.Option(help="column grouping samples of one prompt for pass@k (default: the prompt)"),
    ] = None,
    datasource_key: Annotated[str, typer.Option(help="column naming each row's datasource")] = "datasource",
    answer_key: Annotated[
        str | None, typer.Option(help="column with pre-extracted answers for maj@k")
    ] = None,
    input_format: Annotated[
        str | None, typer.Option("--format", help="jsonl | json | csv | parquet (default: from the suffix)")
    ] = None,
    k: Annotated[
        list[int] | None, typer.Option("--k", help="k of pass@k / maj@k (repeat; default 1,2,4..n)")
    ] = None,
    correct_threshold: Annotated[
        float, typer.Option(help="score at or above which a sample is correct")
    ] = 0.5,
    summary_path: Annotated[
        Path | None, typer.Option("--summary", help="JSON summary (default OUTPUT stem + .summary.json)")
    ] = None,
    report_path: Annotated[
        Path | None, typer.Option("--report", help="HTML report (default OUTPUT stem + .report.html)")
    ] = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="skip the HTML report")] = False,
    url: Annotated[
        str | None, typer.Option(help="score on a running deployment (http://HOST:PORT or grpc://HOST:PORT)")
    ] = None,
    ray: Annotated[
        bool, typer.Option("--ray", help="score on Ray (a local instance unless --ray-address)")
    ] = False,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (implies --ray)")] = None,
    ray_actors: Annotated[int | None, typer.Option(help="Ray scoring actors (default: one per CPU)")] = None,
    overwrite: Annotated[bool, typer.Option(help="start over instead of resuming OUTPUT")] = False,
    durable: Annotated[bool, typer.Option(help="fsync every batch (survives power loss, slower)")] = False,
    config: ConfigOption = None,
    batch: Annotated[int, typer.Option(help="samples per chunk written at once")] = 256,
) -> None:
    """Score an eval set; resumable (rerun the same command after a crash); writes summary and report."""
    from services import catalog
    from services.evaluate.columns import ColumnMap
    from services.evaluate.job import ScoreSource, score_job
    from services.evaluate.readers import InputError, detect_format
    from services.evaluate.runner import RunConflict, RunPlan
    from services.evaluate.scorers import ScoringAborted
    from services.evaluate.summary import default_report_path, default_summary_path
    from services.evaluate.targets import UnsafeOutput
    from services.launch import run

    settings = _settings(config)
    if url is None and catalog.owner(grader) is None:
        err.print(f"[red]unknown grader {grader!r}; available: {', '.join(catalog.grader_names())}[/red]")
        raise typer.Exit(2)
    columns = ColumnMap(
        prompt=prompt_key,
        response=response_key,
        label=label_key,
        datasource=datasource_key,
        prompt_id=prompt_id_key,
        answer=answer_key,
    )
    try:
        plan = RunPlan(
            input_path,
            output,
            detect_format(input_path, input_format),
            columns,
            max(1, batch),
            overwrite=overwrite,
            durable=durable,
        )
        summary = run(
            score_job(
                plan,
                ScoreSource(grader=grader, url=url, ray=ray, ray_address=ray_address, ray_actors=ray_actors),
                settings,
                err,
                ks=k or None,
                threshold=correct_threshold,
                summary_path=summary_path or default_summary_path(output),
                report_path=None if no_report else report_path or default_report_path(output),
            )
        )
    except (InputError, RunConflict, UnsafeOutput) as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from exc
    except ScoringAborted as exc:
        err.print(f"[red]{escape(str(exc))}[/red]; rerun the same command to resume")
        raise typer.Exit(1) from exc
    if summary["rows"] == 0:
        raise typer.Exit(1)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="scored output (JSONL) or its .summary.json", exists=True)],
    run_b: Annotated[Path, typer.Argument(help="the run to compare against RUN_A", exists=True)],
    html: Annotated[Path | None, typer.Option("--html", help="write a report with plots")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the differences as JSON")] = None,
) -> None:
    """Print (and plot) how RUN_B differs from RUN_A: overall and per datasource."""
    from services.evaluate.compare_runs import run_compare

    try:
        run_compare(run_a, run_b, Console(), html, json_path)
    except (ValueError, KeyError) as exc:
        err.print(f"[red]cannot compare:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc


@app.command()
def check(
    url: Annotated[
        str, typer.Argument(help="http://HOST:PORT/get_reward, http://HOST:PORT, or grpc://HOST:PORT")
    ],
    prompt: Annotated[str, typer.Option(help="probe prompt")] = "What is 6*7?",
    response: Annotated[str, typer.Option(help="probe response")] = "<think>6*7=42</think> \\boxed{42}",
    label: Annotated[str, typer.Option(help="probe label")] = "42",
    timeout: Annotated[float, typer.Option(help="seconds")] = 60.0,
) -> None:
    """Send one probe sample the way the trainer will; print the verdict, latency and extra_logs."""
    from services.launch import run
    from services.probe import probe

    report = run(probe(url, prompt, response, label, timeout))
    report.print(err)
    if not report.ok:
        raise typer.Exit(1)


@app.command("rm-eval")
def rm_eval(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="PAIRS", help="JSONL of {prompt, chosen, rejected[, subset]}", exists=True, dir_okay=False
        ),
    ],
    checkpoint: Annotated[str, typer.Option(help="reward model directory (else reward_rm.checkpoint)")] = "",
    prompt_key: Annotated[str, typer.Option()] = "prompt",
    chosen_key: Annotated[str, typer.Option()] = "chosen",
    rejected_key: Annotated[str, typer.Option()] = "rejected",
    subset_key: Annotated[str, typer.Option(help="column to break accuracy down by")] = "subset",
    batch: Annotated[int, typer.Option(help="pairs per batch")] = 64,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="JSONL, one line per scored pair")
    ] = None,
    summary: Annotated[Path | None, typer.Option(help="JSON file with the report")] = None,
    overwrite: Annotated[
        bool, typer.Option(help="replace the --output / --summary of an earlier rm-eval")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Pairwise accuracy of the reward model (chosen strictly above rejected), overall and per subset."""
    from services.evaluate.rm_eval import PairsJob, check_rm_eval_files, rm_eval_command
    from services.evaluate.targets import UnsafeOutput

    job = PairsJob(
        input_path,
        prompt_key=prompt_key,
        chosen_key=chosen_key,
        rejected_key=rejected_key,
        subset_key=subset_key,
        batch_pairs=batch,
        output=output,
        summary=summary,
        overwrite=overwrite,
    )
    try:
        check_rm_eval_files(job)
    except UnsafeOutput as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from exc
    report = rm_eval_command(job, checkpoint=checkpoint, config=config)
    if report.overall.pairs == 0:
        raise typer.Exit(1)


@app.command()
def config(
    defaults: Annotated[
        bool, typer.Option("--defaults", help="the settings tree on its defaults, with descriptions")
    ] = False,
    markdown: Annotated[bool, typer.Option(help="as docs/configuration.md (with --defaults)")] = False,
    config_file: ConfigOption = None,
) -> None:
    """Print the settings: with --defaults the whole tree as commented YAML, else the effective
    settings (defaults < YAML file < ARBITER_* environment)."""
    if defaults:
        from services.config_reference import configuration_markdown, defaults_yaml

        typer.echo(configuration_markdown() if markdown else defaults_yaml(), nl=False)
        return
    import yaml

    effective = _settings(config_file).model_dump(mode="json")
    typer.echo(yaml.safe_dump(effective, sort_keys=False, allow_unicode=True), nl=False)


@app.command()
def graders() -> None:
    """List the services and graders this install has."""
    from services import catalog

    for name in catalog.SERVICES:
        spec = catalog.service(name)
        typer.echo(f"{name}: {spec.summary}")


def _prestart_math(args: Sequence[str]) -> None:
    """`arbiter score` in this process with a grader that sends samples to the math grader's
    pool: its fork server (a fresh Python importing sympy, half a second) starts before anything
    else loads (typer's parsing loads pydantic), and the pool takes it over. A best-effort look at
    the arguments: a wrong guess only starts a fork server that exits unused, or starts none."""
    if not args or args[0] != "score":
        return
    grader = "reward_rules"
    for index, arg in enumerate(args):
        if arg == "--":
            break
        name, equals, value = arg.partition("=")
        if name in ("--url", "--ray", "--ray-address"):
            return  # scored elsewhere
        if name == "--grader":
            grader = value if equals else (args[index + 1] if index + 1 < len(args) else "")
    if grader in _MATH_GRADERS:
        from services.reward_rules.math.pool import prestart

        prestart()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    _prestart_math(args)
    app(args=args, prog_name="arbiter")


if __name__ == "__main__":
    main(sys.argv[1:])
