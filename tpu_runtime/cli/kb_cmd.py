"""`tpu-agent ask` and `tpu-agent kb build|status|add`: the knowledge base from the command line.

Importing this module loads only typer and rich; the engine (chromadb, bm25s, the embedding model) is
imported inside each command, so `tpu-agent --help` stays fast and never touches torch or jax.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tpu_runtime.cli.consoles import make_console, print_json
from tpu_runtime.cli.progress_bar import ProgressBar
from tpu_runtime.errors import BadInput

if TYPE_CHECKING:
    from tpu_runtime.router import RouteDecision

kb_app = typer.Typer(
    help="The knowledge index behind `tpu-agent ask`: build it, check it, add your own docs folder.",
    no_args_is_help=True,
)
out = make_console()
err = make_console(stderr=True)


def ask(
    question: Annotated[
        str, typer.Argument(help="your question, or a flag, env var, API name or error line")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the answer as JSON")] = False,
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="how many passages to return")] = 5,
    no_route: Annotated[
        bool, typer.Option("--no-route", help="do not check whether another specialist fits better")
    ] = False,
) -> None:
    """Answer from the indexed docs with citations, or say plainly that they do not cover it.

    When the question reads like a crash to diagnose, a model to onboard or kernel work, a one-line
    hint on stderr names the command that fits better; the docs still answer.

    Example: tpu-agent ask "How do I select the eager mode in TorchTPU?"   (first use builds the index)
    """
    from tpu_runtime.cli.render.ask.terminal import render_answer
    from tpu_runtime.knowledge.api import answer, check_query

    # A QueryError (bad question, exit 2) or a KbIndexError (unusable index, exit 1) ends the command at
    # the CLI's error boundary.
    check_query(question, k)
    route = None if no_route else _route(question)
    with ProgressBar(err, first="knowledge index", percent=True) as progress:
        reply = answer(question, k, progress=progress)
    if as_json:
        data = reply.model_dump(mode="json")
        data["route"] = route.model_dump(mode="json") if route is not None else None
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        render_answer(reply, out, err)


ROUTE_HINTS = {
    "tpu-diagnostics": "this looks like a crash or profile to diagnose",
    "tpu-model-onboarding": "this looks like a model to onboard",
    "tpu-kernel-development": "this looks like Pallas kernel work",
}
"""What `ask` says when the router sends a question to another specialist."""
CLEAR_MARGIN = 2.0
"""Router points by which another specialist must beat the knowledge base before `ask` hints at it."""


def _route(question: str) -> RouteDecision:
    """Route the question like `tpu-agent route`; print a one-line hint when another specialist clearly
    fits better (the knowledge base answers anyway: a hint, never a refusal)."""
    from tpu_runtime.cli.route_cmd import next_step
    from tpu_runtime.router import KNOWLEDGE, analyse

    analysis = analyse(question, [])
    decision = analysis.decision
    margin = analysis.scores[decision.agent] - analysis.scores[KNOWLEDGE]
    if decision.agent != KNOWLEDGE and margin >= CLEAR_MARGIN:
        command, _ = next_step(analysis, question)
        err.print(
            f"hint: {ROUTE_HINTS.get(decision.agent, decision.agent)} ({decision.agent}: {decision.reason}): "
            f"run `{command}`; answering from the docs anyway",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return decision


@kb_app.command("build")
def kb_build(
    rebuild: Annotated[
        bool, typer.Option(help="drop the index (added folders are kept) and build anew")
    ] = False,
    lexical: Annotated[bool, typer.Option(help="build the BM25 side only, no vectors")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
) -> None:
    """Build or update the index; only sources whose content changed are read and embedded again.

    Example: tpu-agent kb build
    """
    from tpu_runtime.cli.render.ask.terminal import render_build
    from tpu_runtime.knowledge.build import BuildRequest, run_kb_build

    with ProgressBar(err, first="knowledge index", percent=True) as progress:  # KbIndexError: exit 1
        report = run_kb_build(BuildRequest(rebuild=rebuild, dense=not lexical), progress)
    print_json(report) if as_json else render_build(report, out, err)


@kb_app.command("add")
def kb_add(
    folder: Annotated[
        Path, typer.Argument(help="a folder of docs (Markdown, reST, text, HTML) or a docs clone")
    ],
    lexical: Annotated[bool, typer.Option(help="index it for BM25 only, no vectors (faster)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
) -> None:
    """Index a docs folder of your own; it is re-read whenever its files change.

    Example: tpu-agent kb add ~/src/my-team-docs
    """
    from tpu_runtime.cli.render.ask.terminal import render_build
    from tpu_runtime.knowledge.api import add_folder
    from tpu_runtime.knowledge.store import KbIndexError

    try:
        with ProgressBar(err, first="knowledge index", percent=True) as progress:
            report = add_folder(folder, progress=progress, dense=not lexical)
    except KbIndexError as exc:  # the folder cannot be indexed as given: bad input here
        raise BadInput(str(exc)) from None
    print_json(report) if as_json else render_build(report, out, err)


@kb_app.command("status")
def kb_status(
    as_json: Annotated[bool, typer.Option("--json", help="print the status as JSON")] = False,
) -> None:
    """What is indexed, with which model, and what changed since.  Example: tpu-agent kb status"""
    from tpu_runtime.cli.render.ask.terminal import render_status
    from tpu_runtime.knowledge.api import status

    result = status()
    if as_json:
        print_json(result)
        return
    render_status(result, out, err)


def register_kb(app: typer.Typer) -> None:
    """Add `ask` and the `kb` group to the main app."""
    app.command("ask")(ask)
    app.add_typer(kb_app, name="kb")
