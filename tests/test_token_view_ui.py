"""The token view on the RLOO tab, in the real app driven in Chromium: after the session's short RLOO run, opening
the accordion picks the latest recorded step and a group, draws every completion of it token by token with its
advantage, names the colour scale, and gives each token its Δ log-prob on hover."""
import re

from playwright.sync_api import expect

from browser import open_page, screenshot
from rloo_studio.rloo import tokens


def test_token_view_draws_a_group_and_names_its_colour_scale(trained_app):
    run_dir = trained_app.ws_dir / "runs" / trained_app.run_id
    last = max(tokens.recorded(run_dir))
    with open_page(trained_app.url, height=1400) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text(trained_app.run_id, timeout=60_000)
        page.get_by_role("button", name=re.compile("^Token view")).click()
        expect(page.locator("#rloo-token-step input")).to_have_value(str(last), timeout=30_000)
        expect(page.locator("#rloo-token-group input")).to_have_value(re.compile(r"^prompt \d+ · "), timeout=30_000)
        view = page.locator("#rloo-token-view")
        expect(view.locator(".tv-legend")).to_contain_text("lower ← Δ log-prob → higher", timeout=30_000)

        k = int(re.match(r"prompt (\d+)", page.locator("#rloo-token-group input").input_value()).group(1))
        group = tokens.read_tokens(run_dir, step=last, prompt=k)
        expect(view.locator(".tv-row")).to_have_count(len(group))  # one drawn row per completion of the group
        expect(view.locator(".tv-tok")).to_have_count(sum(len(r["tokens"]) for r in group))
        best = max(group, key=lambda r: r["advantage"])
        expect(view.locator(".tv-side").first).to_contain_text(f"advantage {best['advantage']:+.3f}")
        tip = view.locator(".tv-tok").first.get_attribute("title")
        assert tip.startswith("Δ log-prob ") and ("KL to reference" in tip or "no reference" in tip), tip
        expect(view.locator(".tv-summary").first).to_contain_text(tokens.summary(group)["verdict"].split(":")[0])
        # the scale is drawn: the bar has the diverging gradient and tokens are coloured
        bar = view.locator(".tv-bar").evaluate("e => getComputedStyle(e).backgroundImage")
        assert "linear-gradient" in bar, bar
        screenshot(page, "rloo-token-view")
