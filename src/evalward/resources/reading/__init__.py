"""Reading the repository's YAML: where resources live (`evalward.yaml`, discovery), YAML
parsed with every value's place kept, and problems worded at their file and line."""
