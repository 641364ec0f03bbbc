import json


def get_assert(output, context):
    """A mango is described as yellow or orange."""
    return json.loads(output).get("color") in ("yellow", "orange")
