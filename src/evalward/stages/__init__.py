"""The stages between the resources and the record: the changes a pull request makes, the plan
and its estimate, preflight, the result cache, scoring a plan, the comparison of base and
head, its statistics and the gate."""
