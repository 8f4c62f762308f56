"""Drawing and the reader's side of a page: plotting helpers, live explorers, the head and model
views, the exercise registry, display and glue. Imports only :mod:`book.kit`."""
