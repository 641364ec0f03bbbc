"""The LLM judges: the absolute judge and its panel, the pairwise judge and its settings, a
judge's consistency across orders, and its calibration against human labels."""
