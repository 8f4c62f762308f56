"""The Sphinx side: the build's extension, the two editions, fonts, the prose roles and the
notebook file format. Imports nothing of the book's content."""
