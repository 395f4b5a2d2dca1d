"""What every stage stands on: the workspace (SQLite + run folders), typed configs and their forms,
model loading, the <think> parser and chat templates, answers, sampling, memory pre-flight, errors,
and the Studio object. Nothing here knows about a tab, a job kind, or gradio."""
