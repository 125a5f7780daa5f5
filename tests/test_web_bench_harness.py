"""The browser benchmark's own logic, without a browser (bench/web/).

What decides its numbers: the built thread ends with the marker the page is waited
for; a WebSocket frame log says when the server finished running the page and how
many runs a click caused; a timed-out sample counts as slower than any other.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.web.build import build_thread, last_message_marker, thread_id_for
from bench.web.measure import median
from bench.web.probe import Frame, Wire
from bench.web.report import markdown, targets


def wire_with(frames: list[Frame]) -> Wire:
    wire = Wire.__new__(Wire)  # no CDP session: only the frame log is exercised
    wire.frames = list(frames)
    wire.timed_fragments = set()
    return wire


def run(start: float, end: float, status: int, *, size: int = 100) -> list[Frame]:
    return [
        Frame(start, 10, "new_session"),
        Frame(start + 0.01, size, "delta"),
        Frame(end, 5, "script_finished", status=status),
    ]


def test_a_built_thread_ends_with_the_marker_the_page_is_waited_for(tmp_path: Path) -> None:
    from gatehouse.graph import Settings, open_session

    db = tmp_path / "t.db"
    assert build_thread(3, db) == 15
    session = open_session(Settings(db=str(db), workspace=str(tmp_path / "ws")))
    try:
        messages = session.view(thread_id_for(3)).messages
        assert session.view(thread_id_for(3)).pending is None
    finally:
        session.close()
    assert [m.type for m in messages[:5]] == ["human", "ai", "tool", "tool", "ai"]
    assert messages[-1].content == last_message_marker(3)
    assert last_message_marker(3) not in "".join(str(m.content) for m in messages[:-1])
    names = [c["name"] for c in messages[1].tool_calls]
    assert names == ["write_file", "read_file"]
    assert 150 <= len(messages[0].content.encode()) <= 250


def test_the_page_is_idle_only_after_a_run_that_did_not_hand_over_to_a_rerun() -> None:
    wire = wire_with(run(1.0, 2.0, ForwardMsg.FINISHED_SUCCESSFULLY))
    mark = wire.mark()
    assert wire.idle_at(mark) is None  # nothing ran since the mark
    wire.frames += run(3.0, 4.0, ForwardMsg.FINISHED_EARLY_FOR_RERUN)
    assert wire.idle_at(mark) is None  # st.rerun(): another run follows
    wire.frames += run(4.0, 6.5, ForwardMsg.FINISHED_SUCCESSFULLY)[:2]
    assert wire.idle_at(mark) is None  # running
    wire.frames.append(Frame(6.5, 5, "script_finished", status=ForwardMsg.FINISHED_SUCCESSFULLY))
    assert wire.idle_at(mark) == 6.5
    traffic = wire.traffic(mark)
    assert (traffic.runs, traffic.reruns, traffic.deltas) == (2, 1, 2)
    assert traffic.run_s == [1.0, 2.5]
    assert traffic.bytes == 2 * (10 + 100 + 5)


def test_timer_polls_neither_count_as_runs_nor_keep_the_page_busy() -> None:
    wire = wire_with([])
    mark = wire.mark()
    wire.add(Frame(0.5, 8, "auto_rerun"), "live")  # st.fragment(run_every=...) named "live"
    wire.frames += run(1.0, 1.5, ForwardMsg.FINISHED_SUCCESSFULLY)  # the click's run
    poll = [
        Frame(2.0, 10, "new_session", fragments=("live",)),
        Frame(
            2.1,
            5,
            "script_finished",
            status=ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
            fragments=("live",),
        ),
    ]
    wire.frames += poll
    assert wire.idle_at(mark) == 1.5
    wire.frames.append(Frame(3.0, 10, "new_session", fragments=("live",)))  # a poll running now
    assert wire.idle_at(mark) == 1.5
    traffic = wire.traffic(mark)
    assert (traffic.runs, traffic.polls) == (1, 2)
    clicked = wire_with([])
    clicked.add(Frame(0.1, 8, "auto_rerun"), "live")
    mark = clicked.mark()
    clicked.frames += poll  # only the timed fragment ran (a click inside it): it is the run
    assert clicked.idle_at(mark) == 2.1


def test_a_timed_out_sample_counts_as_slower_than_any_other() -> None:
    assert median([1.0, None, 2.0]) == 2.0
    assert median([None, None, 1.0]) is None
    assert median([3.0, 1.0]) == 2.0
    assert median([]) is None


def test_the_report_judges_issue_23s_targets() -> None:
    def size(open_s: float, elements: int, approve_bytes: int, live_s: float = 0.8) -> dict:
        sample = {
            "ready_s": 0.5,
            "settled_s": 0.6,
            "traffic": {"bytes": approve_bytes, "runs": 1, "reruns": 0},
        }
        return {
            "messages": 50,
            "errors": [],
            "open": {"samples": [{"ready_s": open_s}], "median_s": open_s},
            "send": {"samples": [sample], "median_s": 0.5},
            "approve": {"samples": [sample], "median_s": 0.5},
            "cross_tab": {"samples": [{"ready_s": live_s}], "median_s": live_s},
            "page": {
                "dom_elements": elements,
                "dom_nodes": elements,
                "js_heap_mb": 20,
                "js_heap_after_gc_mb": 10,
            },
        }

    flat = {"10": size(1.0, 2000, 50_000), "200": size(1.2, 2100, 52_000)}
    assert all(ok is not False for _, _, ok in targets(flat, {"tabs": 20, "server_cpu_pct": 0.5}))
    grown = {"10": size(1.0, 2000, 50_000), "200": size(2.5, 36_000, 1_800_000, live_s=2.4)}
    failed = {t for t, _, ok in targets(grown, None) if ok is False}
    assert any(t.startswith("open until") for t in failed)
    assert any(t.startswith("DOM elements") for t in failed)
    assert any(t.startswith("bytes per approve") for t in failed)
    assert any("CI test" in t for t in failed)
    assert any(t.startswith("a decision made in another tab") for t in failed)
    text = markdown(
        {
            "environment": {"when": "now", "machine": "m", "load_average": [1], "command": "c"},
            "sizes": grown,
        }
    )
    assert "| open `?thread=ID` until the last message shows, s | 1.00 (n=1) | 2.50 (n=1) |" in text
