"""Inspect: what a reward model says about a response and why, step by step.

  scoring      the one scoring path: load a reward run (or a base with an untrained head), score a response
               and every <think> step from one forward pass, score a batch of texts
  dataset      the whole labeled set scored: accuracy by kind and source, the pairs the model ranks wrongly
  model_input  what a model reads: the templated text and token ids (the "what the model sees" panels)
  process      a process reward model's probability that each step is right, from one forward pass
  lenses       the two side by side: each step's outcome-prefix score beside its process probability, and where
               they disagree

It sits between the label stage (the pairs it scores) and the reward stage (whose held-out breakdown and
active labeling score through it); the RLOO stage and the UI stand on it.
"""
