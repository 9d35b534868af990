"""Reading sparseps run directories and turning them into sweep tables.

Shared by experiments/sweep-bandwidth (runs a grid and collects its table) and experiments/plot
(draws it). Plain standard library: the run directory format is the driver's
(config.json, metrics.jsonl, eval.jsonl, summary.json; see experiments/run).
"""
