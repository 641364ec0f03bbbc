def get_assert(output, context):
    """The answer ends with the expected number."""
    return output.strip().rstrip(".").endswith(context["vars"]["answer"])
