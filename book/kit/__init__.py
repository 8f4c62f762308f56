"""The floor everything stands on: input validation, typed settings, the string table (English
and Chinese) and timing. Imports nothing of ``book``."""
