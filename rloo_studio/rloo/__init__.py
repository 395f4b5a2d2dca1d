"""The policy: the RLOO job, its reward functions, completions (samples.jsonl), before/after
comparison, held-out evaluation, what the RLOO tab shows, the playground, and completions sent to labeling."""
