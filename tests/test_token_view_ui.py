"""The token view on the RLOO tab, in the real app driven in Chromium: after the session's short RLOO run, opening
the accordion picks the latest recorded step and a group, draws every completion of it token by token with its
advantage, names the colour scale, and gives each token its Δ log-prob on hover. The Runs tab draws the same view
for the finished run picked there."""
import re

from browser import open_page, screenshot
from playwright.sync_api import expect

from rloo_studio.rloo import tokens


def check_view(page, run_dir, prefix: str):
    """The accordion `prefix`-token-acc opened: the latest recorded step and a group picked, every completion of
    the group drawn token by token with its advantage and hover, the verdict and the colour scale named."""
    last = max(tokens.recorded(run_dir))
    page.locator(f"#{prefix}-token-acc").get_by_role("button", name=re.compile("^Token view")).click()
    expect(page.locator(f"#{prefix}-token-step input")).to_have_value(str(last), timeout=30_000)
    expect(page.locator(f"#{prefix}-token-group input")).to_have_value(re.compile(r"^prompt \d+ · "), timeout=30_000)
    view = page.locator(f"#{prefix}-token-view")
    expect(view.locator(".tv-legend")).to_contain_text("lower ← Δ log-prob → higher", timeout=30_000)
    k = int(re.match(r"prompt (\d+)", page.locator(f"#{prefix}-token-group input").input_value()).group(1))
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


def test_token_view_draws_a_group_and_names_its_colour_scale(trained_app):
    with open_page(trained_app.url, height=1400) as page:
        page.get_by_role("tab", name="RLOO").click()
        expect(page.locator("#rloo-status")).to_contain_text(trained_app.run_id, timeout=60_000)
        check_view(page, trained_app.ws_dir / "runs" / trained_app.run_id, "rloo")
        screenshot(page, "rloo-token-view")


def test_the_runs_tab_draws_the_token_view_of_the_run_picked_there(trained_app):
    with open_page(trained_app.url, height=1400) as page:
        page.get_by_role("tab", name="Runs").click()
        page.locator("#runs-token-acc").get_by_role("button", name=re.compile("^Token view")).click()
        expect(page.locator("#runs-token-view")).to_contain_text("Select an RLOO run", timeout=30_000)
        box = page.locator("#runs-pick input")
        box.fill(trained_app.run_id)
        page.get_by_role("option", name=trained_app.run_id, exact=True).click()
        page.keyboard.press("Escape")
        page.locator("#runs-token-acc").get_by_role("button", name=re.compile("^Token view")).click()  # close
        check_view(page, trained_app.ws_dir / "runs" / trained_app.run_id, "runs")  # and open again
        screenshot(page, "runs-token-view")
