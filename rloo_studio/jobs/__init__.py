"""Background training jobs: one at a time, observed (never driven) by the UI."""
