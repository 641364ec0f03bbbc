"""A promptfoo configuration converted into evalward Agents, EvalFixtures and Evals."""
