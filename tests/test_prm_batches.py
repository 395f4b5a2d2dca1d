"""The process reward model's training order (prm/batches.py): every response once an epoch, in whole batches of
similar length that pad far less than random batches, the same order again for the same seed and epoch (what a
resumed run relies on), another order the next epoch."""
import random

from rloo_studio.prm.batches import LengthBatches


def batches(sampler, size):
    order = list(sampler)
    return order, [order[i:i + size] for i in range(0, len(order), size)]


def padding(lengths, groups) -> float:
    """The share of a padded batch's tokens that are padding, over all batches."""
    slots = sum(max(lengths[i] for i in b) * len(b) for b in groups)
    return 1 - sum(lengths[i] for b in groups for i in b) / slots


def test_each_epoch_is_every_response_once_in_whole_batches_of_similar_length():
    rng = random.Random(0)
    lengths = [rng.randint(52, 105) for _ in range(3805)]  # the demo's spread of response lengths
    sampler = LengthBatches(lengths, 64, seed=0)
    order, groups = batches(sampler, 64)
    assert sorted(order) == list(range(len(lengths)))
    assert all(len(b) == 64 for b in groups[:-1]) and 0 < len(groups[-1]) <= 64  # a short batch only last
    shuffled = list(range(len(lengths)))
    rng.shuffle(shuffled)
    at_random = [shuffled[i:i + 64] for i in range(0, len(shuffled), 64)]
    assert padding(lengths, at_random) > 0.2 and padding(lengths, groups) < 0.05
    # the batches themselves come in no order of length (not longest first, not shortest first)
    widths = [max(lengths[i] for i in b) for b in groups[:-1]]
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)


def test_the_same_seed_and_epoch_give_the_same_order_and_the_next_epoch_another():
    lengths = [random.Random(1).randint(5, 50) for _ in range(1000)]
    first = LengthBatches(lengths, 16, seed=3)
    epoch0, epoch1 = list(first), list(first)  # iterating moves on to the next epoch, as a random sampler does
    assert epoch0 != epoch1
    again = LengthBatches(lengths, 16, seed=3)
    again.set_epoch(1)  # a run resumed in its second epoch
    assert list(again) == epoch1
    assert list(LengthBatches(lengths, 16, seed=4)) != epoch0
