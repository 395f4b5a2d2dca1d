"""What this process computes on: shown in the app header and recorded with each run."""
from __future__ import annotations

import os

import torch

from rloo_studio.core import bootstrap


def describe() -> dict:
    if torch.cuda.is_available():
        i = torch.cuda.current_device()
        free, total = torch.cuda.mem_get_info(i)
        name = f"{torch.cuda.get_device_name(i)} ({total / 2**30:.0f} GB, {free / 2**30:.0f} GB free)"
    else:
        n, cores = torch.get_num_threads(), os.cpu_count()
        name = f"CPU ({n} thread{'s' * (n != 1)}, {cores} core{'s' * (cores != 1)})"
    return {"device": name, "cuda": torch.cuda.is_available(), "backend": bootstrap.backend(),
            "unsloth_error": bootstrap.UNSLOTH_ERROR}
