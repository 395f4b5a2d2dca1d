"""Export for serving: an RLOO run's adapter merged into its base loads with plain transformers and answers
as the adapter on top of the base does; the adapter alone leaves TRL's ref/ copy out; bad input is refused."""
import json
import shutil
from pathlib import Path

import pytest
from rloo_run_fixture import shared_root, trained_run

from rloo_studio.core.errors import DataError
from rloo_studio.core.paths import DEMO_MODEL
from rloo_studio.core.workspace import Workspace
from rloo_studio.label.demo_data import open_workspace
from rloo_studio.runs.export_model import INFO_FILE, export_model

PROMPTS = ["What is 123+456?", "What is 905+87?"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    ws_dir, rid = trained_run(shared_root(tmp_path_factory) / "shared-rloo-run")
    mine = tmp_path_factory.mktemp("export") / "ws"  # exports are written into it: a copy of the shared run
    shutil.copytree(ws_dir, mine)
    return Workspace(mine), rid


def _inputs(tok, prompt):
    return tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                   return_tensors="pt", return_dict=True)


def _same_as_adapter_on_base(merged_dir: Path, adapter_dir: Path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged = AutoModelForCausalLM.from_pretrained(str(merged_dir)).eval()
    tok = AutoTokenizer.from_pretrained(str(merged_dir))
    base = AutoModelForCausalLM.from_pretrained(str(DEMO_MODEL)).eval()
    base_logits = {p: base(**_inputs(tok, p)).logits.detach() for p in PROMPTS}
    on_base = PeftModel.from_pretrained(base, str(adapter_dir)).eval()
    with torch.no_grad():
        for p in PROMPTS:
            enc = _inputs(tok, p)
            lm, la = merged(**enc).logits, on_base(**enc).logits
            assert torch.allclose(lm, la, atol=1e-4, rtol=1e-4), (lm - la).abs().max()
            assert (lm - base_logits[p]).abs().max() > 1e-2  # the adapter did change the policy
            gm = merged.generate(**enc, do_sample=False, max_new_tokens=40)
            ga = on_base.generate(**enc, do_sample=False, max_new_tokens=40)
            assert gm.tolist() == ga.tolist()
    assert "<think>" in tok.decode(gm[0]) and tok.chat_template  # the chat template came along


def test_merged_export_loads_with_transformers_and_answers_as_the_adapter(run, tmp_path):
    ws, rid = run
    res = export_model(ws, rid, tmp_path / "merged", merged=True)
    out = Path(res.out)
    assert res.merged and not res.base_4bit and "model.safetensors" in res.files
    assert {"config.json", "tokenizer.json", "chat_template.jinja"} <= set(res.files)
    assert not any(f.startswith("adapter") for f in res.files)  # a plain model: no PEFT needed to load it
    assert json.loads((out / INFO_FILE).read_text())["run_id"] == rid
    ad = export_model(ws, rid, tmp_path / "adapter")
    assert not ad.merged and "adapter_model.safetensors" in ad.files
    assert "ref" not in ad.files and "training_args.bin" not in ad.files  # TRL's frozen copy and the pickle stay out
    assert (ws.run_dir(rid) / "adapter" / "ref").is_dir()  # (the run folder has it)
    _same_as_adapter_on_base(out, Path(ad.out))


def test_bad_run_or_busy_folder_is_refused_and_writes_nothing(run, tmp_path):
    ws, rid = run
    with pytest.raises(DataError, match="There is no RLOO run nope"):
        export_model(ws, "nope", tmp_path / "a")
    with pytest.raises(DataError, match="is not a run id"):
        export_model(ws, "../../etc", tmp_path / "a")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(DataError, match="already exists and is not empty"):
        export_model(ws, rid, busy, merged=True)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]  # no half-written folder left
    (tmp_path / "empty").mkdir()  # an existing empty folder is fine
    assert "adapter_config.json" in export_model(ws, rid, tmp_path / "empty").files


def test_cli_export_model(run, tmp_path, capsys):
    ws, rid = run

    from rloo_studio.cli import main

    def cli(*args):  # the CLI's main() in this process: (exit code, stdout, stderr)
        code = main(["export-model", *map(str, args), "--workspace", str(ws.root)])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, err = cli(rid, "--out", tmp_path / "m", "--merged")
    assert code == 0, err
    assert "merged model" in out and (tmp_path / "m" / "model.safetensors").exists()
    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(str(tmp_path / "m")).config.model_type == "qwen3"
    code, _, err = cli("nope", "--out", tmp_path / "x")
    assert code == 2 and "There is no RLOO run nope" in err and "Traceback" not in err
    code, _, err = cli(rid, "--out", tmp_path / "m")
    assert code == 2 and "already exists and is not empty" in err and "Traceback" not in err


def test_a_run_on_a_4bit_base_is_merged_into_the_full_precision_base_and_says_so(tmp_path):
    from rloo_run_fixture import TRAIN

    from rloo_studio.rloo.config import RlooJobConfig
    from rloo_studio.rloo.job import train_rloo
    from rloo_studio.runs.runner import JobRunner

    ws = open_workspace(tmp_path / "ws", demo=True)
    r = JobRunner(ws)
    rid = r.submit("rloo", RlooJobConfig(**{**TRAIN, "max_steps": 1, "load_in_4bit": True}), train_rloo)
    assert r.wait(rid, 1800) == "completed", r.status(rid)
    res = export_model(ws, rid, tmp_path / "merged", merged=True)
    assert res.base_4bit and res.dtype == "float32"
    assert "merged into the full-precision base weights" in res.summary()
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert "quantization_config" not in config  # a plain full-precision model
    ad = export_model(ws, rid, tmp_path / "adapter")
    assert ad.base_4bit and "4-bit" in ad.summary()
    _same_as_adapter_on_base(tmp_path / "merged", Path(ad.out))


def test_a_typed_export_name_the_os_would_refuse_is_refused_in_words(tmp_path):
    """A 300-character name made `exists()` raise [Errno 36] File name too long, shown raw; now every typed
    export path is checked first and the message says what to change."""
    import pytest

    from rloo_studio.core.errors import DataError
    from rloo_studio.core.workspace import Workspace
    from rloo_studio.label.exporting import export
    from rloo_studio.runs.export_model import app_out, check_out

    ws = Workspace(tmp_path / "ws")
    for call in (lambda: app_out(ws, "x" * 300), lambda: check_out(tmp_path / ("y" * 300)),
                 lambda: export(ws, ws.exports_dir / ("z" * 300 + ".jsonl"))):
        with pytest.raises(DataError, match="too long: each file or folder name may have at most 200") as e:
            call()
        assert "Errno" not in str(e.value) and "this one has 30" in str(e.value) and "…" in str(e.value)
    with pytest.raises(DataError, match="NUL"):
        app_out(ws, "a\x00b")
    assert app_out(ws, "fine-name") == ws.exports_dir / "fine-name"
    assert list(ws.exports_dir.iterdir()) == []  # nothing written by the refusals
