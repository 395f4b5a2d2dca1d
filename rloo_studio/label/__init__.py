"""Labeling: the preference store (queue, labels, undo, agreement), imports and the shapes they
accept, exports for other tools, the records view, candidate generation, prompt sets and the demo data.
Training and scoring are not here: they read the store through `label.store.preference_pairs`."""
