"""The Gradio UI: one module per tab, each a thin layer over core functions."""
