"""The `gatehouse` commands a person stays in: the web UI (`gatehouse`, `gatehouse ui`;
entry.py starts it without typer when it can), `studio` and `chat`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from gatehouse import graph
from gatehouse.ui.term.child import run_child, show_command
from gatehouse.ui.term.cli_base import (
    APP_PATH,
    EXIT_FAILED,
    EXIT_USAGE,
    PROJECT_ROOT,
    AutoApproveOpt,
    DbOpt,
    JsonOpt,
    Text,
    app,
    cli_settings,
    emit,
    err,
    exit_code,
    fail,
    open_cli_session,
    opened,
    out,
    parsed,
    prepare,
    require_thread,
    thread_option,
)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            metavar="N",
            help="Without a command: start the web UI on this port (same as `gatehouse ui --port N`).",
        ),
    ] = None,
) -> None:
    """Without a command, start the web UI (same as `gatehouse ui`)."""
    parsed["bad_id"] = None  # before the command's own are parsed (tests run several)
    if ctx.invoked_subcommand is None:
        ui(port=port, browser=True)
    elif port is not None:
        raise fail(
            f"--port is for the web UI: `gatehouse --port {port}` or `gatehouse ui --port {port}`, "
            f"not with `{ctx.invoked_subcommand}`",
            EXIT_USAGE,
        )


@app.command()
def ui(
    port: Annotated[int | None, typer.Option(metavar="N", help="Port for the web UI.")] = None,
    browser: Annotated[bool, typer.Option(help="Open the sign-in link in a browser.")] = True,
) -> None:
    """Start the Streamlit web UI on 127.0.0.1. It prints a sign-in link that works once
    (and opens it); the sign-in page also takes the install secret."""
    if not APP_PATH.is_file():
        raise fail(f"the web UI is not available: {APP_PATH} does not exist", EXIT_FAILED)
    from gatehouse.ui.web.serve import web_ui_command

    try:
        cmd = web_ui_command(port, browser, APP_PATH)
    except graph.ConfigError as exc:
        raise fail(str(exc), exit_code(exc)) from None
    raise typer.Exit(run_child(cmd))


@app.command()
def signout(
    every: Annotated[
        bool, typer.Option("--all", help="End every browser's web session on this database.")
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sign every browser out of the web app (all ports), at once and without starting
    it: each signs in again with a new link. One browser signs out at /_gatehouse/signout."""
    if not every:
        raise fail("say --all: ends every browser's web session on this database", EXIT_USAGE)
    with opened(lambda: graph.WebSessions(cli_settings(db).db)) as sessions:
        ended = sessions.revoke_all()
    said = f"Signed out {ended} web session(s): every browser signs in again."
    emit(as_json, {"signed_out": ended}, said)


@app.command()
def studio(
    port: Annotated[
        int | None,
        typer.Option(metavar="N", help="Port for the LangGraph dev server (default 2024)."),
    ] = None,
    browser: Annotated[bool, typer.Option(help="Open Studio in a browser.")] = True,
    thread: Annotated[
        list[str] | None,
        typer.Option(
            "--thread", "-t", metavar="ID", help="Open this thread in Studio (repeatable)."
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Start `langgraph dev` on the project's langgraph.json, on Gatehouse's own database:
    Studio sees the threads of the web app and the terminal, and they see Studio's.
    With --thread, the thread is registered with the server and its Studio link printed."""
    if (exe := find_langgraph()) is None:
        raise fail(
            "LangGraph Studio needs langgraph-cli with the in-memory server. Install it with\n"
            "  uv add --dev 'langgraph-cli[inmem]'   (or: pip install 'langgraph-cli[inmem]')\n"
            "then run `gatehouse studio` again.",
            EXIT_FAILED,
        )
    from gatehouse.ui.term.studio import DEFAULT_PORT, run_studio, valid_server_thread_id

    threads = list(thread or [])
    if threads:
        with open_cli_session(db) as session:
            for thread_id in threads:
                require_thread(session, thread_id)
                if problem := valid_server_thread_id(thread_id):
                    raise fail(f"cannot open thread {thread_id} in Studio: {problem}", EXIT_USAGE)
    # The server runs in the project root: it gets this directory's database, workspace
    # and gatehouse.toml as absolute paths, so it is on the files this shell would use.
    try:
        settings = cli_settings(db)
    except graph.ConfigError as exc:
        raise fail(str(exc), exit_code(exc)) from None
    os.environ.update(graph.location_env(settings))
    err.print(Text(f"Database: {graph.redact(settings.db)}", "dim"))  # no password shown
    port = port or DEFAULT_PORT
    cmd = [exe, "dev", "--config", str(PROJECT_ROOT / "langgraph.json"), "--port", str(port)]
    if threads or not browser:
        cmd.append("--no-browser")  # else langgraph dev opens Studio itself
    if not threads:
        from gatehouse.ui.term.studio import how_to_connect, key_file

        # Printed before the server starts (it takes the process): it opens Studio itself.
        graph.install_secret(key_file(settings.db))
        err.print(Text(how_to_connect(f"http://127.0.0.1:{port}", key_file(settings.db))))
        show_command(cmd)
        raise typer.Exit(run_child(cmd, cwd=PROJECT_ROOT))
    show_command(cmd)
    raise typer.Exit(
        run_studio(
            cmd, PROJECT_ROOT, port=port, threads=threads, open_browser=browser, say=out.print
        )
    )


def find_langgraph() -> str | None:
    """The `langgraph` executable: this environment's, else PATH's."""
    local = Path(sys.executable).parent / "langgraph"
    return str(local) if local.exists() else shutil.which("langgraph")


@app.command()
def chat(
    thread: Annotated[str | None, thread_option("Resume this thread.")] = None,
    auto_approve: AutoApproveOpt = False,
    all_: Annotated[
        bool,
        typer.Option(
            "--all", help="With --thread: print the whole history, not only the last turns."
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Interactive chat: streams the run, asks before every gated tool call.

    At a decision: a approve · e edit ($EDITOR if set, else inline JSON, validated) ·
    r reject with a reason · s respond · A approve all remaining · w approve and
    always allow the tool in this thread. After a crash left a call's outcome unknown:
    a run again · f mark failed (with a note) · s respond with what really happened.
    Ctrl-C during a run stops it cleanly; at a
    prompt it exits (the thread stays resumable with --thread). Commands: /help,
    /retry, /history, /undo, /compact, /auto, /new, /exit. --auto-approve (or /auto
    on) runs calls that would ask without asking, shown by a banner and the prompt
    while on.
    """
    from gatehouse.ui.term.chat import Chat
    from gatehouse.ui.term.cli_runs import drive  # here: `--help` lists these commands first

    with open_cli_session(db) as session:
        prepare(session, thread, auto_approve)
        chat = Chat(session, out, err, session.check_args, drive, whole_history=all_)
        raise typer.Exit(chat.loop(thread))
