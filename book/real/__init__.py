"""The pretrained model (all-MiniLM-L6-v2 on the book's own attention layer) and the
measurements made on it. Imports :mod:`book.ideas` and :mod:`book.kit`."""
