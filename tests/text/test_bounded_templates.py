"""jinja2's sandbox held to what a template may make and how long it may run: the bounds every
template evalward renders shares (a mock output's, an imported promptfoo prompt's)."""

from __future__ import annotations

import re
import sys
import time

import pytest
from jinja2.exceptions import SecurityError

from evalward.text.bounded_templates import (
    LARGEST_POWER_BITS,
    LONGEST_REPEAT,
    BoundedSandbox,
    Late,
    until,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("template", "said"),
    [
        (f"{{{{ 'x' * {LONGEST_REPEAT + 1} }}}}", "`*` would make more than"),
        (f"{{{{ {LONGEST_REPEAT + 1} * [0] }}}}", "`*` would make more than"),
        (f"{{{{ 2 ** {LARGEST_POWER_BITS + 1} }}}}", "`**` would make more than"),
    ],
)
def test_a_repeat_or_a_power_past_its_bound_is_refused_before_it_is_made(
    template: str, said: str
) -> None:
    with pytest.raises(SecurityError, match=re.escape(said)):
        BoundedSandbox().from_string(template).render()
    assert BoundedSandbox().from_string("{{ 'ab' * 2 }}{{ 2 ** 8 }}").render() == "abab256"


def test_a_template_past_its_time_is_stopped_and_the_tracer_before_is_put_back() -> None:
    forever = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    before = sys.gettrace()
    with pytest.raises(Late), until(time.monotonic() + 0.2):
        BoundedSandbox().from_string(forever).render()
    assert sys.gettrace() is before
