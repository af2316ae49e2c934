"""`arbiter`: serve the services, or score a file with the same graders, in-process."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from services import catalog
from services.common.auth import AuthConfigError
from services.common.logs import configure_logging
from services.settings import ArbiterSettings, load

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
        typer.Argument(help=f"services to start (default: all of {', '.join(catalog.SERVICES)})"),
    ] = None,
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option(help="bind address for every service started")] = None,
) -> None:
    """Start services in this process (all of them by default) on embedded defaults."""
    from services.common.server import GraderServer, run_until_signalled

    settings = _settings(config)
    names = services or list(catalog.SERVICES)
    unknown = [n for n in names if n not in catalog.SERVICES]
    if unknown:
        err.print(
            f"[red]unknown service(s):[/red] {', '.join(unknown)}; available: {', '.join(catalog.SERVICES)}"
        )
        raise typer.Exit(2)
    if host:
        for name in names:
            catalog.service(name).server_settings(settings).host = host
    servers: list[GraderServer] = []
    for name in catalog.start_order(names):
        peers = {s.name: s.engine for s in servers}
        servers.append(catalog.make_server(name, settings, peers))

    def announce() -> None:
        for s in servers:
            info = s.engine.info
            err.print(
                f"[bold green]{s.name}[/bold green] ({info.name} {info.version}, "
                f"config {info.config_hash}) http {s.http_url}  grpc {s.grpc_target or 'off'}"
            )
            err.print(f"    OpenRLHF: --reward.remote_url {s.http_url}/get_reward")
        err.print("press Ctrl+C to stop")

    try:
        _run(run_until_signalled(servers, announce))
    except (OSError, AuthConfigError) as exc:
        err.print(f"[red]cannot start:[/red] {exc}")
        raise typer.Exit(1) from exc


@app.command()
def score(
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT", help="JSONL of samples", exists=True, dir_okay=False)
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL written with the results")],
    grader: Annotated[str, typer.Option(help="a service name or one of its graders")] = "reward_rules",
    prompt_key: Annotated[str, typer.Option(help="column with the prompt")] = "prompt",
    response_key: Annotated[str, typer.Option(help="column with the response")] = "response",
    label_key: Annotated[str, typer.Option(help="column with the label (reference)")] = "label",
    config: ConfigOption = None,
    batch: Annotated[int, typer.Option(help="samples in flight at once")] = 256,
) -> None:
    """Score a JSONL file with a grader in this process; each row is written back with its result."""
    from services.offline_scoring import ColumnMap, score_file

    settings = _settings(config)
    try:
        grader_obj = catalog.build_named_grader(grader, settings)
    except KeyError as exc:
        err.print(f"[red]{exc.args[0]}[/red]")
        raise typer.Exit(2) from exc
    server = catalog.service(catalog.grader_names()[grader]).server_settings(settings)
    columns = ColumnMap(prompt=prompt_key, response=response_key, label=label_key)
    summary = _run(
        score_file(
            input_path, output, grader_obj, server, settings, columns, batch_size=max(1, batch), console=err
        )
    )
    summary.print(err)
    if summary.rows == 0:
        raise typer.Exit(1)


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
    from services.probe import probe

    report = _run(probe(url, prompt, response, label, timeout))
    report.print(err)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def graders() -> None:
    """List the services and graders this install has."""
    for name in catalog.SERVICES:
        spec = catalog.service(name)
        typer.echo(f"{name}: {spec.summary}")


def _run(coro: Any) -> Any:
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


def main(argv: list[str] | None = None) -> None:
    app(args=argv, prog_name="arbiter")


if __name__ == "__main__":
    main(sys.argv[1:])
