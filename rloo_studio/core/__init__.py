"""What every stage stands on: the workspace (SQLite + run folders), typed configs and their forms,
model loading, the <think> parser and chat templates, the reward model's input text, answers, sampling,
memory pre-flight, errors. Nothing here knows about a tab, a job kind, or gradio, and nothing here imports
the stages above it (tests/test_import_graph.py); the Studio object that wires them is rloo_studio/studio.py."""
