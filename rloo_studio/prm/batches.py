"""The process reward model's training order: batches of responses of similar length, the batches in random order.

Random batches are padded to their longest response: on the demo a quarter of a random batch's tokens are padding,
and the fresh layers' step time follows the padded width. Here each epoch draws a permutation, cuts it into groups
of GROUP batches, sorts each group by length and cuts it into batches, then shuffles the batches: each batch is still
a random draw of the data, only of one length band (docs/PRM.md has what it changed). Seeded as accelerate seeds a
random sampler, by the run's seed plus the epoch, so a resumed run sees the order the uninterrupted one saw.

Standard library and torch only: reproduce.py trains with it too (copied beside it as batches.py).
"""
from __future__ import annotations

import torch
from torch.utils.data import Sampler

GROUP = 8  # batches sorted together: more, less padding; fewer, more mixing of lengths within a batch


class LengthBatches(Sampler):
    """Indices whose every `batch_size` consecutive ones are one batch of similar lengths (a short last batch at the
    end, so that every batch before it is whole)."""

    def __init__(self, lengths: list[int], batch_size: int, seed: int, group: int = GROUP):
        self.lengths, self.batch_size, self.seed, self.group = list(lengths), batch_size, seed, group
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.lengths)

    def set_epoch(self, epoch: int) -> None:  # accelerate's data loader calls it at each epoch
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        n, size = len(self.lengths), self.batch_size * self.group
        perm = torch.randperm(n, generator=g).tolist()
        whole, short = [], []
        for start in range(0, n, size):
            ranked = sorted(perm[start:start + size], key=self.lengths.__getitem__)
            for i in range(0, len(ranked), self.batch_size):
                (whole if i + self.batch_size <= len(ranked) else short).append(ranked[i:i + self.batch_size])
        order = torch.randperm(len(whole), generator=g).tolist()
        yield from (i for b in [whole[k] for k in order] + short for i in b)
        self.epoch += 1


def length_batch_trainer(trainer_cls, lengths: list[int]):
    """`trainer_cls` (transformers' Trainer) training in LengthBatches of `lengths` (its train dataset's, in order)."""

    class LengthBatchTrainer(trainer_cls):
        def _get_train_sampler(self, train_dataset=None):
            seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            return LengthBatches(lengths, self.args.train_batch_size * self.args.gradient_accumulation_steps, seed)

    return LengthBatchTrainer
