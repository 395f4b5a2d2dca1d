"""The reward model: its training job, held-out breakdown by kind of pair, what the Reward tab shows,
and scoring (whole texts, every token, every <think> step) used by Inspect, Records and RLOO."""
