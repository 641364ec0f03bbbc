def strict(named_scores, context):
    """Every metric must be met in full: one assertion of a metric failing fails it."""
    low = sorted(name for name, score in named_scores.items() if score < 1)
    return {
        "pass": not low,
        "score": 0.0 if low else 1.0,
        "reason": f"not met in full: {', '.join(low)}" if low else "every metric met",
    }
