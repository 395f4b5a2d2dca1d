"""The process reward model: its job (a token classifier read at each <think> step, trained on step labels), its
config and presets, the step labels made from rollouts, and what its tab shows. Its scoring is inspect/process.py."""
