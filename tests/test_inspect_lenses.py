"""The Inspect tab's two lenses on one response's steps (inspect/lenses.py, ui/inspect_process.py), without a model:
steps joined by where they start, the sentence true for each case that was computed, the marker on the first doubted
step only, colours that keep text readable, and the newest process reward run chosen unless the user chose."""
import time

import pytest

from rloo_studio.inspect.lenses import compare
from rloo_studio.inspect.scoring import Scored, StepScore
from rloo_studio.ui import inspect_process as P
from rloo_studio.ui.inspect_render import GREEN, RED

TEXT = "<think>\n0+4+0=4\n\n2+3+0=6\n\n8+6+0=14\n</think>\n\nThe answer is 1464."
SPANS = [(8, 15), (17, 24), (26, 34)]


def outcome(deltas, total=2.1892):
    steps, score = [], 2.0
    for (a, b), d in zip(SPANS, deltas):
        score += d
        steps.append(StepScore(TEXT[a:b], a, b, score, d, b))
    return Scored("Add 820 and 634.", TEXT, total, None, None, steps, [], [], True, False)


def process(ps):
    doubt = next((k for k, p in enumerate(ps) if p < 0.5), None)
    return {"steps": [{"text": TEXT[a:b], "start": a, "end": b, "p_correct": p} for (a, b), p in zip(SPANS, ps)],
            "first_doubt": doubt, "min": min(ps, default=None), "product": 0.0, "step_score": "at_read"}


def test_the_steps_are_joined_by_where_they_start():
    v = compare(outcome([0.3, 0.0104, 0.2]), process([0.95, 0.03, 0.4]))
    assert [(s.number, s.text) for s in v.steps] == [(1, "0+4+0=4"), (2, "2+3+0=6"), (3, "8+6+0=14")]
    assert v.doubted.number == 2 and v.largest_drop is None and v.trusted_least.number == 2
    one_sided = compare(outcome([]), process([0.9, 0.2, 0.8]))  # steps the outcome model could not read alone
    assert [s.outcome for s in one_sided.steps] == [None] * 3 and one_sided.doubted.number == 2


@pytest.mark.parametrize("deltas, ps, said", [
    ([0.3, 0.0104, 0.2], [0.95, 0.03, 0.4],
     "The outcome model scores this response +2.19 and sees nothing wrong at step 2 (its score there moved by +0.01); "
     "the process model doubts step 2 (p = 0.03)."),
    ([0.3, -0.0004, -0.05], [0.95, 0.003, 0.4],  # a dip too small beside its other moves to be a verdict
     "The outcome model scores this response +2.19 and sees nothing wrong at step 2 (its score there moved by "
     "-0.0004); the process model doubts step 2 (p = 0.003)."),
    ([0.3, -0.01, 0.2], [0.95, 0.03, 0.4],  # its largest drop, but a small one
     "The outcome model scores this response +2.19 and sees nothing wrong at step 2 (its score there moved by -0.01); "
     "the process model doubts step 2 (p = 0.03)."),
    ([0.3, -0.1, -0.2], [0.95, 0.03, 0.4],
     "The outcome model scores this response +2.19 and does not single out step 2 (its score moved by -0.10 there, "
     "by -0.20 at step 3); the process model doubts step 2 (p = 0.03)."),
    ([0.3, -0.2, 0.1], [0.95, 0.03, 0.4],
     "Both lenses point at step 2: the outcome model's score falls most there (-0.20), and the process model doubts "
     "step 2 (p = 0.03)."),
    ([0.3, 0.1, 0.2], [0.95, 0.87, 0.9],
     "The process model trusts every step (least, step 2: p = 0.87); the outcome model scores this response +2.19 as "
     "a whole."),
])
def test_the_sentence_says_what_was_computed(deltas, ps, said):
    assert P.verdict(compare(outcome(deltas), process(ps)), True) == said


def test_without_a_process_model_the_page_says_what_the_outcome_lens_cannot_see():
    v = compare(outcome([0.3, 0.01, 0.2]), None)
    assert P.verdict(v, False) == ("The outcome model scores this response +2.19. An outcome model scores whole "
                                   "answers: it cannot tell a slipped step from a right one. Train a process reward "
                                   "model on the Process reward tab to judge each step.")
    assert P.verdict(v, True).endswith("Choose a process reward model above to judge each step.")
    page = P.lenses_html(v, False)
    assert "Process model" not in page and page.count("data-testid='outcome-step'") == 3
    assert P.verdict(compare(outcome([]), process([])), True).startswith("No <think> steps in this response")


def test_the_marker_sits_on_the_first_doubted_step_only():
    page = P.lenses_html(compare(outcome([0.3, 0.01, 0.2]), process([0.95, 0.03, 0.04])), True)
    rows = page.split("<tr data-step=")[1:]
    assert ["doubt-marker" in r for r in rows] == [False, True, False]
    assert "class='doubted'" in rows[1] and page.count("data-testid='process-step'") == 3


def _luminance(rgb):
    lin = [(c / 255 / 12.92) if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a, b):
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_text_on_every_shade_reads():
    dark, white = (0x11, 0x11, 0x11), (255, 255, 255)
    assert contrast(dark, RED) >= 4.5 and contrast(dark, GREEN) >= 4.5  # the ends; between them is lighter
    assert contrast(dark, (0xfd, 0xe8, 0xe8)) >= 4.5  # a doubted row
    assert contrast(white, (0xb9, 0x1c, 0x1c)) >= 4.5  # the marker


def test_the_newest_process_run_is_chosen_unless_the_user_chose(empty_workspace):
    ws = empty_workspace
    assert P.newest(ws) == P.NONE
    for rid in ("prm-old", "prm-new"):
        ws.upsert_run(rid, kind="prm", name=rid, status="completed")
        (ws.run_dir(rid) / "adapter").mkdir(parents=True)
        (ws.run_dir(rid) / "adapter" / "config.json").write_text("{}")
        time.sleep(0.02)
    assert P.newest(ws) == "prm-new"
    assert P.restore(ws, P.NONE, False).value == "prm-new"  # not chosen by hand: the newest
    assert P.restore(ws, P.NONE, True).value == P.NONE  # "(none)" chosen by hand stays
    assert P.restore(ws, "prm-old", True).value == "prm-old"
    assert P.restore(ws, "prm-gone", True).value == "prm-new"


def test_a_disagreement_is_set_apart_from_an_agreement():
    said = lambda deltas: P.lenses_html(compare(outcome(deltas), process([0.95, 0.03, 0.4])), True)  # noqa: E731
    assert "lens-verdict agree" in said([0.3, -0.2, 0.1])  # both point at step 2
    assert "lens-verdict agree" not in said([0.3, -0.01, 0.2])  # its largest drop, too small to be a verdict
    assert "lens-verdict agree" not in said([0.3, 0.01, 0.2])
