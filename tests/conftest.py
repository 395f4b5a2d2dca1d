import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if os.environ.get("RLOO_STUDIO_TEST_NO_BOOTSTRAP") != "1":
    from rloo_studio.core import bootstrap  # noqa: F401  (unsloth before transformers, as in the app)

import pytest  # noqa: E402

from rloo_studio.core.paths import DEMO_DATA, DEMO_MODEL  # noqa: E402


@pytest.fixture
def workspace(tmp_path):
    from rloo_studio.label.demo_data import open_workspace

    return open_workspace(tmp_path / "ws", demo=True)


@pytest.fixture
def empty_workspace(tmp_path):
    from rloo_studio.core.workspace import Workspace

    return Workspace(tmp_path / "ws")


@pytest.fixture(scope="session")
def demo_data():
    return DEMO_DATA


@pytest.fixture
def copy_tree(tmp_path):
    def _copy(src, name):
        dst = tmp_path / name
        shutil.copytree(src, dst)
        return dst

    return _copy


# -- a real Qwen3 tokenizer and tiny random Qwen3 models (tests/qwen3_fixture.py), built once per session


@pytest.fixture(scope="session")
def qwen3_tokenizer():
    """Qwen3's tokenizer with Unsloth's qwen3-thinking template (the generation prompt opens <think>)."""
    from qwen3_fixture import build_tokenizer

    return build_tokenizer("qwen3-thinking")


@pytest.fixture(scope="session")
def qwen3_hybrid_tokenizer():
    """Qwen3's tokenizer with the hybrid qwen3 template (enable_thinking switches reasoning off)."""
    from qwen3_fixture import build_tokenizer

    return build_tokenizer("qwen3")


@pytest.fixture(scope="session")
def qwen3_model(tmp_path_factory):
    """Folder of a tiny random Qwen3ForCausalLM with the real tokenizer and the qwen3-thinking template,
    biased to emit </think> and EOS (so that rewards see closed reasoning)."""
    from qwen3_fixture import save_model

    return save_model(tmp_path_factory.mktemp("qwen3-thinking"), "qwen3-thinking", emit=True)


@pytest.fixture(scope="session")
def qwen3_random_model(tmp_path_factory):
    """The same without the bias: it never closes its reasoning (every completion is cut)."""
    from qwen3_fixture import save_model

    return save_model(tmp_path_factory.mktemp("qwen3-random"), "qwen3-thinking")


@pytest.fixture(scope="session")
def qwen3_hybrid_model(tmp_path_factory):
    """A tiny random Qwen3 with the hybrid qwen3 template (enable_thinking switches reasoning off)."""
    from qwen3_fixture import save_model

    return save_model(tmp_path_factory.mktemp("qwen3-hybrid"), "qwen3")


# -- markers: `make test-fast` runs what is neither `browser` nor `train` ------------------------------------
# browser: the test drives the real app in Chromium (its module uses tests/browser.py).
# train:   the test trains, samples from or scores with a model (a module listed here, or a test listed here).
TRAIN_MODULES = {
    "test_accelerate", "test_concurrent_loads", "test_demo_model", "test_export_model", "test_faults",
    "test_generate", "test_gpu_check", "test_models", "test_prm", "test_python_api", "test_notebook",
    "test_memory_release", "test_playground", "test_process_reward_notebook", "test_quickstart_notebook",
    "test_qwen3_cli", "test_qwen3_thinking",
    "test_real_size_ui", "test_repro", "test_reward_job", "test_rewards", "test_rloo_job", "test_rloo_label",
    "test_rloo_learns", "test_rloo_with_reward_model", "test_runs", "test_scoring", "test_training",
}
TRAIN_TESTS = {
    "test_cli.py::test_score_json_prints_one_json_object",
    "test_cli.py::test_score_prints_a_cut_response_without_an_answer_score",
    "test_cli.py::test_score_a_model_with_its_own_code_only_with_the_flag",
    "test_cli.py::test_train_cli_rejects_bad_config_with_a_message",
    "test_records.py::test_filter_pairs_the_reward_model_disagrees_with",
    "test_qwen3_fixture.py::test_tiny_models",
    "test_blind.py::test_short_reward_run_records_held_out_accuracy_per_kind_and_source",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives the real app in Debian's Chromium")
    config.addinivalue_line("markers", "train: trains, samples from or scores with a model")


# -- two workers (`make test`: pytest-xdist, --dist loadgroup) ----------------------------------------------------
# A module's tests run on one worker (its module fixtures start once); modules that use the same shared app
# form one group, so that app starts once. The slowest groups go first: xdist hands out the first groups
# round-robin, so the long ones run side by side instead of one of them at the end with the other worker idle.
SHARED_APP_FIXTURES = ("demo_app", "upload_limit_app", "trained_app", "first_runs_app")
SLOW_FIRST = ["test_whole_loop", "test_charts_ui", "test_real_size_ui", "test_quickstart_notebook",
              "test_process_reward_notebook", "test_rloo_learns",
              "demo_app", "test_typed_input_ui", "test_faults", "test_qwen3_ui", "test_concurrent_labeling",
              "trained_app", "test_accelerate", "first_runs_app", "test_reward_job", "test_fresh_tabs_ui",
              "test_qwen3_cli", "test_cli"]


def _groups(items) -> dict[str, str]:
    """{module: group}: the module's own name, or the name of the first shared app of the modules it is joined to
    by using the same shared apps."""
    uses: dict[str, set] = {}
    for item in items:
        module = item.module.__name__.rpartition(".")[2]
        uses.setdefault(module, set()).update(n for n in SHARED_APP_FIXTURES if n in getattr(item, "fixturenames", ()))
    group = {m: m for m in uses}
    for app in SHARED_APP_FIXTURES:
        joined = {group[m] for m, used in uses.items() if app in used}
        name = min(joined & set(SHARED_APP_FIXTURES), key=SHARED_APP_FIXTURES.index, default=app)
        for m in group:
            if group[m] in joined:
                group[m] = name
    return group


def _in_group(item, group: str) -> None:
    """The '@group' suffix of the node id that pytest-xdist's loadgroup scheduler keeps together. pytest-xdist 3.8
    writes it to `item._nodeid`, which pytest 9.2 no longer reads (a node's id is its `_id`): without this, a group's
    tests were spread over both workers and each worker started its own copy of every shared app."""
    from _pytest.nodeid import NodeId

    if not item.nodeid.endswith(f"@{group}"):
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rpartition(".")[2]
        if any(getattr(v, "__module__", None) == "browser" for v in vars(item.module).values()):
            item.add_marker(pytest.mark.browser)
        if module in TRAIN_MODULES or f"{module}.py::{item.originalname}" in TRAIN_TESTS:
            item.add_marker(pytest.mark.train)
    group = _groups(items)
    rank = {g: i for i, g in enumerate(SLOW_FIRST)}
    firsts: dict[str, int] = {}
    for i, item in enumerate(items):
        g = group[item.module.__name__.rpartition(".")[2]]
        firsts.setdefault(g, i)
        item.add_marker(pytest.mark.xdist_group(g))
        if getattr(config.option, "loadgroup", False):  # a worker of `--dist loadgroup`
            _in_group(item, g)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the files' own order
    # stable: a group's modules keep their order, and each module's tests stay together
    items.sort(key=lambda it: (rank.get(group[it.module.__name__.rpartition(".")[2]], len(rank)),
                               firsts[group[it.module.__name__.rpartition(".")[2]]]))


# -- one Chromium and one app per set of launch flags for the whole run (tests/browser.py) ---------------------


@pytest.fixture(scope="session", autouse=True)
def chromium():
    """The test run's one headless Chromium, launched on the first browser.open_page (each page gets a fresh context:
    its own cookies and localStorage) and closed at the end."""
    import browser

    browser.SHARED = browser.SharedChromium()
    yield browser.SHARED
    browser.SHARED.close()
    browser.SHARED = None


# Apps shared by the test modules that need the same launch flags and workspace. Their tests share the workspace:
# each labels under its own annotator name and counts what it adds rather than what is there.
SHARED_APPS: dict = {}  # fixture name -> the running app
LAST_USER: dict = {}  # fixture name -> nodeid of the last test that uses it: the app stops after that test


@pytest.fixture(scope="session")
def demo_app(tmp_path_factory):
    """No flags, a demo workspace."""
    from browser import running_app

    with running_app(tmp_path_factory.mktemp("demo-app") / "ws") as a:
        SHARED_APPS["demo_app"] = a
        yield a


@pytest.fixture(scope="session")
def upload_limit_app(tmp_path_factory):
    """`--max-upload-mb 1`, a new empty workspace."""
    from browser import running_app

    with running_app(tmp_path_factory.mktemp("upload-limit-app") / "ws", "--max-upload-mb", "1", seed=False) as a:
        SHARED_APPS["upload_limit_app"] = a
        yield a


@pytest.fixture(scope="session")
def trained_app(tmp_path_factory, qwen3_model):
    """`--allow-path <qwen3_model>` and a fake Hugging Face cache holding `test_model_choices.HUB_ID`, a copy of the
    demo workspace with the session's short RLOO run (tests/rloo_run_fixture.py); `.run_id` is that run."""
    from browser import running_app
    from rloo_run_fixture import shared_root, trained_run
    from test_model_choices import HUB_ID, cache_model

    ws_dir, rid = trained_run(shared_root(tmp_path_factory) / "shared-rloo-run")
    root = tmp_path_factory.mktemp("trained-app")
    shutil.copytree(ws_dir, root / "ws")
    cache_model(root / "hub", HUB_ID, DEMO_MODEL)
    with running_app(root / "ws", "--allow-path", str(qwen3_model), seed=False,
                     env={"HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1"}) as a:
        a.run_id, a.qwen3 = rid, qwen3_model
        SHARED_APPS["trained_app"] = a
        yield a


@pytest.fixture(scope="session")
def first_runs_app(tmp_path_factory):
    """No flags, a demo workspace, for the modules that check the first run of their kind: test_reward_ui (no
    reward run before its own) and test_rloo_ui (no RLOO run before its own). Neither labels a pair nor starts a
    run of the other's kind, so they share one app start."""
    from browser import running_app

    with running_app(tmp_path_factory.mktemp("first-runs-app") / "ws") as a:
        SHARED_APPS["first_runs_app"] = a
        yield a


def pytest_collection_finish(session):
    for item in session.items:
        for name in SHARED_APP_FIXTURES:
            if name in getattr(item, "fixturenames", ()):
                LAST_USER[name] = item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """A shared app stops once its last test is done, not at the end of the run: its memory is free for the rest."""
    for name, nodeid in LAST_USER.items():
        if nodeid == item.nodeid and name in SHARED_APPS:
            SHARED_APPS.pop(name).stop()


def pytest_terminal_summary(terminalreporter):
    import browser

    if any(browser.STARTED.values()):
        terminalreporter.write_line(f"this run started the app {browser.STARTED['app']} times and Chromium "
                                    f"{browser.STARTED['chromium']} times (tests/browser.py)")
