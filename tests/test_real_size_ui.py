"""A Qwen3-0.6B-shaped model through the tabs, in Chromium, as its first user would take it: the real shape (28 layers,
hidden 1024, vocabulary 151,936; random weights in bfloat16, the real Qwen3 tokenizer and hybrid chat template) as
`Qwen/Qwen3-0.6B` in a Hugging Face cache folder. It is listed with its size in the model fields; the pre-flight gives
a memory figure; a reward model and an RLOO run each train one step from their tab; Inspect scores a response with
that reward model; the Playground answers with the base model and the run's adapter. The pre-flight's figures
match the app's rise in resident memory during each job within 25%. Each step's time and the app's peak resident
memory while it ran are printed (docs/BENCHMARKS.md records them). Slow: not in `make test-fast`."""
import re
import shutil
import threading
import time

import psutil
import pytest
from browser import fill, open_page, running_app, screenshot
from playwright.sync_api import expect
from qwen3_fixture import save_model
from test_model_choices import cache_model

from rloo_studio.core.workspace import Workspace

HUB = "Qwen/Qwen3-0.6B"
LONG = 1_500_000  # ms: a 0.6B model on a shared 2-core CPU; the test waits for behaviour, not for time


class Peak:
    """The app process's resident memory, sampled every 0.2 s in a thread: its peak since `reset`."""

    def __init__(self, pid: int):
        self.proc, self.peak, self.base, self.on = psutil.Process(pid), 0, 0, True
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while self.on:
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.2)

    def reset(self) -> None:
        self.base = self.peak = self.proc.memory_info().rss

    def gib(self) -> tuple[float, float]:
        """(peak resident memory, its rise over the reset), GiB."""
        return self.peak / 2**30, (self.peak - self.base) / 2**30


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("real-size")
    built = save_model(root / "built", "qwen3", emit=True, shape="0.6B")
    cache_model(root / "hub", HUB, built)
    shutil.rmtree(built)
    with running_app(root / "ws", env={"HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1"}) as a:
        yield a


def _train(page, kind: str, peak: Peak) -> tuple[float, tuple[float, float]]:
    peak.reset()
    t0 = time.time()
    page.locator(f"#{kind}-launch").click()
    expect(page.locator(f"#{kind}-check")).to_contain_text("Started run", timeout=LONG)
    expect(page.locator(f"#{kind}-status")).to_contain_text("completed", timeout=LONG)
    return time.time() - t0, peak.gib()


def _estimate(text: str) -> float:
    m = re.search(r"Estimated peak memory ([\d.]+) GiB", text)
    assert m, text
    return float(m[1])


def test_a_qwen3_0_6b_shaped_model_through_every_tab(app):
    peak = Peak(app.proc.pid)
    with open_page(app.url) as page:
        # -- Reward model: listed with its size, a memory figure, one step
        page.get_by_role("tab", name="Reward model").click()
        page.locator("#reward-model input").click()
        expect(page.get_by_role("option", name=re.compile(r"^Qwen\/Qwen3-0\.6B · 1\.\d GB · HF cache$"))
               ).to_be_visible(timeout=LONG)
        page.keyboard.press("Escape")
        fill(page, "reward-model", HUB)
        fill(page, "reward-max-steps", 1)
        fill(page, "reward-per-device-train-batch-size", 2)
        fill(page, "reward-max-length", 128)
        fill(page, "reward-eval-fraction", 0.02)  # 4 pairs: each held-out pass of the 0.6B shape takes seconds a pair
        page.get_by_role("button", name="Check settings").click()
        # the pre-flight of the form as filled (the one drawn at page load is the preset's)
        expect(page.locator("#reward-preflight")).to_contain_text(
            re.compile(r"max_length=128[\s\S]*\b4 held out[\s\S]*Estimated peak memory"), timeout=LONG)
        reward_estimate = _estimate(page.locator("#reward-preflight").inner_text())
        reward_s, reward_mem = _train(page, "reward", peak)
        screenshot(page, "real-size-reward")

        # -- RLOO: the same model as the policy, one step
        page.get_by_role("tab", name="RLOO").click()
        fill(page, "rloo-model", HUB)
        fill(page, "rloo-num-generations", 2)
        fill(page, "rloo-per-device-train-batch-size", 2)
        fill(page, "rloo-max-steps", 1)
        fill(page, "rloo-max-completion-length", 16)
        fill(page, "rloo-eval-prompts", 0)
        page.locator("#rloo-validate").click()
        expect(page.locator("#rloo-check")).to_contain_text("Settings are valid.", timeout=LONG)
        rloo_estimate = _estimate(page.locator("#rloo-check").inner_text())
        rloo_s, rloo_mem = _train(page, "rloo", peak)
        screenshot(page, "real-size-rloo")

        # -- Inspect: a response scored by that reward model, step by step
        page.get_by_role("tab", name="Inspect").click()
        (reward_run,) = [r["id"] for r in Workspace(app.ws_dir).runs("reward")]
        page.locator("#inspect-model input").click()
        page.get_by_role("option", name=re.compile(reward_run)).click()
        page.locator("#inspect-prompt textarea").fill("Add 123 and 154.")
        page.locator("#inspect-response textarea").fill(
            "<think>\n3+4+0=7\n\n2+5+0=7\n\n1+1+0=2\n</think>\n\nThe answer is 277.")
        page.locator("#inspect-score").click()
        expect(page.locator("#inspect-steps .rs-step")).to_have_count(3, timeout=LONG)

        # -- Playground: the base model and base + the run's adapter answer the same prompt
        page.get_by_role("tab", name="Playground").click()
        (rloo_run,) = [r["id"] for r in Workspace(app.ws_dir).runs("rloo")]
        expect(page.locator("#playground-run input")).to_have_value(f"{rloo_run} (completed)", timeout=LONG)
        reveal_sampling = page.get_by_role("button", name="Sampling")
        reveal_sampling.click()
        page.locator("#playground-max-new input").fill("8")
        page.locator("#playground-prompt textarea").fill("Add 123 and 154.")
        t0 = time.time()
        page.locator("#playground-go").click()
        for side in ("#playground-base", "#playground-adapter"):
            expect(page.locator(side)).to_contain_text("8 tokens, cut at max new tokens", timeout=LONG)
        play_s = time.time() - t0
        screenshot(page, "real-size-playground")

    peak.on = False
    # the pre-flight's figure (the job's own memory) against the app's rise while the job ran, within 25%
    for estimate, (_, rise) in ((reward_estimate, reward_mem), (rloo_estimate, rloo_mem)):
        assert abs(estimate - rise) <= 0.25 * rise, (estimate, rise)
    print(f"\nQwen3-0.6B shape on this host: reward step {reward_s:.0f} s (estimate {reward_estimate} GiB; app peak "
          f"{reward_mem[0]:.2f} GiB, +{reward_mem[1]:.2f} GiB during the job), RLOO step {rloo_s:.0f} s (estimate "
          f"{rloo_estimate} GiB; app peak {rloo_mem[0]:.2f} GiB, +{rloo_mem[1]:.2f} GiB), "
          f"the Playground's two answers of 8 tokens {play_s:.0f} s")
