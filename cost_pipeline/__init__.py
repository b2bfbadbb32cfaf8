"""cost_pipeline: where the money for training and serving large models went."""
