"""Other tools' eval configurations, converted into evalward's resources.

Each importer reads a configuration with the line of every value, converts what has a natural
equivalent, and refuses the rest at its file and line with what to do instead: a suite that
silently lost a check would pass where the original failed.
"""
