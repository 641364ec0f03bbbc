"""Rendering results for people (comment, summary) and machines (results.json, outputs)."""
