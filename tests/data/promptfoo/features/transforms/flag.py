import json


def get_transform(output, context):
    """The ship's flag, from the JSON reply."""
    return json.loads(output)["flag"]
