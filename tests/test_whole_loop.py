"""The whole loop as a new user, in Chromium: generate, label 30 pairs from the keyboard, train a reward
model (its defaults), inspect a response, launch RLOO rewarded by that model alone (the demo-cpu-reward-model
preset), watch the plots, and read what it learned in the before/after panel; then a before/after of 10 prompts.
A screenshot of each tab is saved in test-artifacts/ (the README's comes from here)."""
import re
import time

import yaml
from browser import App, fill, open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.core.workspace import Workspace
from rloo_studio.rloo.compare import read_eval
from rloo_studio.runs.runner import read_metrics

RM_MARGIN = 0.20  # held-out accuracy gain: measured +39.5 to +41 points over 3 reward-model x 2 RLOO seeds
# (docs/RLOO.md), +41.5 in this test (50.5% -> 92.0%)
LONG = 900_000  # ms: wait for behaviour, not for time, on a shared 2-core machine
POINTS_JS = """el => Math.max(0, ...[...el.querySelectorAll('g.scatterlayer g.trace path.js-line')]
                  .map(p => (p.getAttribute('d') || '').split('L').length))"""  # Plotly: M x,y L x,y ...


def pair_id(page):
    m = re.search(r"pair #(\d+)", page.locator("#lbl-status").inner_text())
    return m.group(1) if m else ""


def test_whole_loop_as_a_new_user(tmp_path):
    ws_dir = tmp_path / "fresh-ws"
    app = App(ws_dir, "--demo")  # a fresh workspace, seeded from assets on first start
    app.wait_ready(600)
    try:
        with open_page(app.url) as page:
            # 1. Generate candidates from the demo model.
            expect(page.locator("#lbl-status")).to_contain_text("Enter your name", timeout=LONG)
            page.get_by_text("Generate candidates from a model").click()
            fill(page, "lbl-gen-limit", 6)
            page.get_by_role("button", name="Generate", exact=True).click()
            expect(page.get_by_text(re.compile(r"completed: \d+ new pairs from \d+ prompts"))).to_be_visible(
                timeout=LONG)

            # 2. Label 30 pairs with the keyboard.
            page.get_by_label("Your name").focus()
            page.keyboard.type("newcomer")
            page.keyboard.press("Enter")
            expect(page.locator("#lbl-status")).to_contain_text("pair #", timeout=LONG)
            for k in range(30):
                before = pair_id(page)
                page.keyboard.press("1" if k % 3 else "2")
                page.wait_for_function(
                    "b => { const m = (document.querySelector('#lbl-status')?.innerText || '').match(/pair #(\\d+)/);"
                    " return m && m[1] !== b; }", arg=before, timeout=60000)
            expect(page.locator("#lbl-progress")).to_contain_text("you: 30")
            screenshot(page, "loop-1-label")

            # 3. Train a reward model.
            page.get_by_role("tab", name="Reward model").click()
            expect(page.locator("#reward-preflight")).to_contain_text("labeled pairs", timeout=LONG)
            page.locator("#reward-launch").click()
            expect(page.locator("#reward-status")).to_contain_text("completed", timeout=LONG)
            screenshot(page, "loop-2-reward")
            ws = Workspace(ws_dir)
            (reward_run,) = [r["id"] for r in ws.runs("reward")]

            # 4. Inspect a response with that model: coloured steps.
            page.get_by_role("tab", name="Inspect").click()
            page.locator("#inspect-model input").click()
            page.get_by_role("option", name=re.compile(reward_run)).click()
            page.locator("#inspect-score").click()
            expect(page.locator("#inspect-steps .rs-step").first).to_be_visible(timeout=LONG)
            expect(page.locator("#inspect-summary")).not_to_contain_text("Untrained")
            screenshot(page, "loop-3-inspect")

            # 5. RLOO rewarded by that reward model alone (the demo-cpu-reward-model preset); watch the plots move;
            #    it completes and says what the policy learned on the held-out prompts.
            page.get_by_role("tab", name="RLOO").click()
            page.locator("#rloo-preset input").click()
            page.get_by_role("option", name="demo-cpu-reward-model", exact=True).click()
            expect(page.locator("#rloo-rewards").get_by_label("reward_model")).to_be_checked(timeout=LONG)
            expect(page.locator("#rloo-rewards").get_by_label("correctness")).not_to_be_checked()
            page.locator("#rloo-launch").click()
            expect(page.locator("#rloo-check")).to_contain_text("Started run rloo-", timeout=LONG)
            plot = page.locator("#rloo-plot-reward")
            end = time.time() + LONG / 1000
            first = 0
            while time.time() < end and first < 2:
                first = plot.evaluate(POINTS_JS)
                page.wait_for_timeout(500)
            while time.time() < end and plot.evaluate(POINTS_JS) <= first:
                page.wait_for_timeout(500)
            assert plot.evaluate(POINTS_JS) > first  # the plot moved while we watched
            screenshot(page, "loop-4-rloo")
            # 40 steps and two 200-prompt evaluations: about a minute on an idle machine, far longer on a loaded one
            expect(page.locator("#rloo-status")).to_contain_text("completed", timeout=3 * LONG)
            held = page.locator("#rloo-held-out")  # folded to its headline under the charts: opened as a person would
            expect(held).to_contain_text("Held-out accuracy", timeout=LONG)
            held.get_by_text("the run's own measurement").first.click()
            panel = page.locator("#rloo-before-after")
            expect(panel).to_contain_text("after", timeout=LONG)
            panel.scroll_into_view_if_needed()
            screenshot(page, "loop-4b-before-after-panel")
            words = panel.locator(".learned").inner_text()
            m = re.search(r"Held-out accuracy ([\d.]+)% → ([\d.]+)%", words)
            assert m and float(m[2]) >= float(m[1]) + 10, words  # measured +40 points (docs/RLOO.md)
            assert "learned to reason" in words, words
            (rloo_run,) = ws.runs("rloo")
            assert rloo_run["status"] == "completed"
            # What the studio's reward model alone taught (once tests/test_rloo_learns.py's reward-model test, the
            # same thresholds): the policy learned to reason, without losing its arithmetic among reasoning answers.
            ev = read_eval(ws, rloo_run["id"])
            b, a = ev["before"], ev["after"]
            assert a["accuracy"] >= b["accuracy"] + RM_MARGIN, ev
            assert a["thinking_rate"] >= b["thinking_rate"] + 0.25, ev
            assert a["accuracy_reasoning"] >= b["accuracy_reasoning"] - 0.08, ev
            steps = [m for m in read_metrics(ws.run_dir(rloo_run["id"])) if "reward" in m]
            assert len(steps) == 40 and max(m["kl"] for m in steps) <= 0.1
            cfg = yaml.safe_load((ws.run_dir(rloo_run["id"]) / "config.yaml").read_text())
            assert cfg["rewards"] == ["reward_model"] and cfg["reward_model_run"] == reward_run

            # 6. Before / after.
            page.get_by_text("Before / after: the same held-out prompts").click()
            fill(page, "rloo-compare-n", 10)
            page.locator("#rloo-compare").click()
            expect(page.locator("#rloo-compare-summary")).to_contain_text("10 held-out prompts", timeout=LONG)
            screenshot(page, "loop-5-before-after")
            page.get_by_role("tab", name="Runs").click()
            expect(page.get_by_text(rloo_run["id"]).filter(visible=True).first).to_be_visible(timeout=LONG)
            screenshot(page, "loop-6-runs")
    finally:
        app.stop()
