"""The Reward and RLOO tabs' layout at 1400x1000 in Chromium: no table header, field label or
explanatory text is cut (its words lie inside every box that clips it: a table's scrolling frame, a column, a
row), the "Check settings" button is a full-size button beside Train, primary buttons are coloured, a disabled button
looks disabled, and explanatory (info) text is readable (contrast at least 4.5:1 on its background).

The workspace holds a completed reward run and an RLOO run rewarded by two functions (the widest completions
table), their folders written as the jobs write them.
"""
import json

import pytest
from browser import open_page, running_app, screenshot, unfold
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.runs.jobs import KINDS
from rloo_studio.runs.runner import prepare_run, write_status

# Words of visible labels, headers and explanatory texts that some clipping box (overflow other than visible) hides.
CUT_JS = """([root, sel]) => {
  const scope = document.querySelector(root);
  const cut = [];
  const shown = e => e.offsetParent && getComputedStyle(e).visibility === 'visible';
  const clippers = e => { const out = [];
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') out.push(a.getBoundingClientRect()); }
    return out; };
  for (const el of scope.querySelectorAll(sel)) {  // (the tab bar keeps 1 px copies of its tabs: not shown)
    if (!shown(el) || !el.textContent.trim() || el.closest('.visually-hidden')) continue;
    const boxes = [el.getBoundingClientRect(), ...clippers(el)];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let n;
    while ((n = walker.nextNode())) {
      if (n.parentElement.closest('.sr-only')) continue;  // a label for screen readers only, never drawn
      const re = /\\S+/g; let m;
      while ((m = re.exec(n.textContent))) {
        if (!/\\w/.test(m[0])) continue;  // an icon (an accordion's ▼ turns), not a word
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        for (const w of [...r.getClientRects()].filter(x => x.width > 0))
          if (boxes.some(b => w.left < b.left - 1 || w.right > b.right + 1)) { cut.push(m[0]); break; }
      }
    }
  }
  return [...new Set(cut)];
}"""
LABELS = "th, [role=columnheader], label, [data-testid=block-info], .info-text, button, h1, h2, h3"

# The look of a button: its box, background and text colour, opacity and cursor.
BUTTON_JS = """b => { const r = b.getBoundingClientRect(), cs = getComputedStyle(b);
  return {w: r.width, h: r.height, bg: cs.backgroundColor, color: cs.color, opacity: parseFloat(cs.opacity),
          cursor: cs.cursor, disabled: b.disabled}; }"""

# Each visible info text: its colour and the background it is drawn on (the first opaque one up the tree).
INFO_JS = """(root) => [...document.querySelector(root).querySelectorAll('.info-text, [data-testid=block-info] + *')]
  .filter(e => e.offsetParent && e.textContent.trim()).slice(0, 12).map(e => {
    let bg = 'rgb(255, 255, 255)';
    for (let a = e; a; a = a.parentElement) { const c = getComputedStyle(a).backgroundColor;
      if (c && c !== 'transparent' && !c.endsWith(', 0)')) { bg = c; break; } }
    return [e.textContent.trim().slice(0, 40), getComputedStyle(e).color, bg]; })"""


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])


def contrast(fg: str, bg: str) -> float:
    def lum(c):
        ch = [v / 255 for v in _rgb(c)]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _reward_run(ws: Workspace) -> str:
    """A completed reward run as the job leaves it: metrics with held-out points and the breakdown by kind."""
    from rloo_studio.reward.config import RewardJobConfig

    ctx = prepare_run(ws, "reward", RewardJobConfig())
    for s in range(0, 25):
        ctx.metric({"step": s, "loss": 0.7 / (1 + s), "accuracy": min(1, 0.5 + s / 30), "margin": s / 5,
                    "mean_reward": 0.1})
        if s % 8 == 0:
            ctx.metric({"step": s, "eval_loss": 0.7 / (1 + s), "eval_accuracy": min(1, 0.5 + s / 30),
                        "eval_margin": s / 6, "eval_mean_reward": 0.0})
    kinds = {"both reason": (4, 3), "only chosen reasons": (43, 43), "only rejected reasons": (5, 2)}
    (ctx.dir / "held_out_breakdown.json").write_text(json.dumps({
        "pairs": 52, "correct": 48, "accuracy": 48 / 52,
        "by_kind": {k: {"pairs": n, "correct": c, "accuracy": c / n} for k, (n, c) in kinds.items()},
        "by_source": {"demo-pairs": {"pairs": 47, "correct": 46, "accuracy": 46 / 47},
                      "ultrafeedback-binarized-sample": {"pairs": 5, "correct": 2, "accuracy": 0.4}}, "rows": []}))
    (ctx.dir / "preflight.json").write_text(json.dumps({"trained_on": {"train": 190, "held_out": 52}}))
    msg = "finished at step 24; held-out accuracy 92.3%; adapter saved"
    write_status(ctx.dir, {"id": ctx.run_id, "kind": "reward", "status": "completed", "message": msg})
    ws.upsert_run(ctx.run_id, status="completed", message=msg)
    return ctx.run_id


def _rloo_run(ws: Workspace) -> str:
    """An RLOO run rewarded by correctness and a reward model (the widest completions table)."""
    ctx = prepare_run(ws, "rloo", KINDS["rloo"].preset_config("demo-cpu"))
    with open(ctx.dir / "samples.jsonl", "w") as f:
        for step in (1, 2):
            ctx.metric({"step": step, "loss": 0.0, "reward": 0.5 * step, "kl": 0.01 * step})
            for g in range(2):
                for i in range(4):
                    text = "<think>3+4+0=7\n2+5+0=7</think>The answer is 77."
                    f.write(json.dumps({"step": step, "group": g, "prompt": "Add 23 and 54.", "completion": text,
                                        "response": text, "rewards": {"correctness": float(i % 2),
                                                                      "reward_model": 0.25 * i - 0.4},
                                        "total": i % 2 + 0.25 * i - 0.4, "advantage": 0.3 * i - 0.45,
                                        "length": 21, "truncated": i == 3}) + "\n")
    write_status(ctx.dir, {"id": ctx.run_id, "kind": "rloo", "status": "completed", "message": "finished at step 2"})
    ws.upsert_run(ctx.run_id, status="completed", message="finished at step 2")
    return ctx.run_id


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from rloo_studio.label.demo_data import open_workspace

    ws_dir = tmp_path_factory.mktemp("layout") / "ws"
    ws = open_workspace(ws_dir, demo=True)
    _reward_run(ws)
    _rloo_run(ws)
    with running_app(ws_dir, seed=False) as a:
        yield a


def _tab(page, name: str, ready: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    expect(page.locator(ready)).to_be_visible(timeout=120000)


def test_reward_tab_cuts_nothing_and_its_buttons_look_like_buttons(app):
    with open_page(app.url) as page:
        _tab(page, "Reward model", "#reward-status")
        expect(page.locator("#reward-status")).to_contain_text("completed")
        expect(page.locator("#reward-runs")).to_contain_text("completed")
        cut = page.evaluate(CUT_JS, ["#reward-runs", "th, td"])
        assert cut == [], f"the Reward runs table cuts these words: {cut}"
        unfold(page, "reward")  # every setting on the page
        cut = page.evaluate(CUT_JS, [".gradio-container", LABELS])
        assert cut == [], f"Reward tab: words cut by their box: {cut}"
        check = page.get_by_role("button", name="Check settings").evaluate(BUTTON_JS)
        train = page.locator("#reward-launch").evaluate(BUTTON_JS)
        assert check["h"] >= train["h"] - 1, f"'Check settings' is a strip: {check['h']:.0f} px high, Train " \
                                             f"{train['h']:.0f}"
        assert check["w"] <= 1.5 * train["w"], f"'Check settings' spans {check['w']:.0f} px, Train {train['w']:.0f}"
        assert contrast(train["color"], train["bg"]) >= 2.5 and _rgb(train["bg"]) != _rgb(check["bg"]), train
        for text, fg, bg in page.evaluate(INFO_JS, ".gradio-container"):
            assert contrast(fg, bg) >= 4.5, f"info text {text!r} is faint: {fg} on {bg} ({contrast(fg, bg):.1f}:1)"
        screenshot(page, "layout-reward")


def test_rloo_tab_cuts_no_label_or_column(app):
    with open_page(app.url) as page:
        _tab(page, "RLOO", "#rloo-status")
        table = page.locator("#rloo-completions")
        expect(table).to_contain_text("reward_model")
        for header in ("cut", "advantage", "correctness", "reward_model", "tokens"):
            expect(table.locator("th", has_text=header)).to_have_count(1)
        frame = table.locator(".virtual-table-viewport, .table-wrap").first
        assert frame.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the completions table scrolls sideways"
        unfold(page, "rloo")  # every setting on the page
        cut = page.evaluate(CUT_JS, [".gradio-container", LABELS])
        assert cut == [], f"RLOO tab: words cut by their box: {cut}"
        expect(page.get_by_text("mask_truncated_completions", exact=True)).to_be_visible()
        screenshot(page, "layout-rloo")


def test_a_disabled_button_looks_disabled(app):
    with open_page(app.url) as page:
        _tab(page, "RLOO", "#rloo-status")
        launch = page.locator("#rloo-launch")
        before = launch.evaluate(BUTTON_JS)
        launch.evaluate("b => { b.disabled = true; b.getAnimations().forEach(a => a.finish()); }")  # any button
        after = launch.evaluate(BUTTON_JS)
        assert after["opacity"] <= 0.6 < before["opacity"] and after["cursor"] == "not-allowed", (before, after)
