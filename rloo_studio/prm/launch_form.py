"""The process-reward-model section's check before Launch, without gradio: what the job would refuse after
loading the model, said before a run exists."""
from __future__ import annotations

from rloo_studio.core.errors import DataError
from rloo_studio.core.job_config import check_seeds
from rloo_studio.prm.config import MIN_RESPONSES, PrmJobConfig


def launch_check(ws, cfg: PrmJobConfig) -> None:
    """Raises a StudioError in words: a model (or teacher) that is not there or ships its own code unticked, a
    teacher with another tokenizer, a seed numpy refuses, too few step-labeled responses. Loads tokenizers, never a
    model."""
    from rloo_studio.core.model_options import check_remote_code
    from rloo_studio.core.models import load_tokenizer, resolve
    from rloo_studio.prm.data import labeled_rows

    cfg.validate()
    check_seeds(cfg)
    from transformers import TrainingArguments

    from rloo_studio.core import trainer_settings
    from rloo_studio.prm.config import DERIVED, trainer_args

    trainer_settings.check_config(cfg, TrainingArguments, trainer_args(cfg, held_out=1), DERIVED)
    path = resolve(cfg.model)
    check_remote_code(path, cfg.trust_remote_code)
    tok = load_tokenizer(path, cfg.trust_remote_code)
    if cfg.token_labels == "teacher":
        from rloo_studio.prm.teacher import check_teacher

        check_teacher(cfg, tok)
    n = len(labeled_rows(ws, cfg))
    if n < MIN_RESPONSES:
        raise DataError(f"Only {n} step-labeled responses ({cfg.labels_from}); label the steps of at least "
                        f"{MIN_RESPONSES} in the Label tab's step mode, import a stepwise file, or make step labels "
                        "from rollouts.")
